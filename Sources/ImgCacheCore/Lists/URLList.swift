#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A list of URLs read from a file descriptor (prefetch's input), one per
/// line: blank lines and lines starting with `#` are skipped, surrounding
/// spaces, a CR before the LF and a UTF-8 byte-order mark at the start of the
/// first line are dropped. Bytes that are not UTF-8 are kept, percent-encoded
/// (`URLText`). Or a table (`ListFormat`): each row's URL, its other columns
/// kept in `rows` until its answer takes them.
///
/// A thread of its own reads ahead of the work by at most `window` URLs, so a
/// list of any length takes the same memory and work starts before the list
/// ends (a pipe that is still being written).
public final class URLList: Sendable {
    /// What the reader thread reports.
    public enum Item: Equatable, Sendable {
        case url(String, line: Int)
        /// A line that cannot be a URL (too long), with why.
        case rejected(String, line: Int, reason: String)
        /// A table's row that cannot be taken (no URL, a quote not closed, not UTF-8), with why.
        case badRow(line: Int, reason: String)
        /// How many URL lines the list has (regular files, counted ahead).
        case length(Int)
        case end
        case failed(SystemError)
    }

    /// The most URLs handed over at once.
    static let batchSize = 64

    /// The longest line taken as a URL; longer ones are rejected, not buffered.
    public static let maximumLineLength = 16 * 1024

    public let descriptor: Int32
    /// How the list is named in messages.
    public let name: String
    public let format: ListFormat
    /// Lists read after this one, in turn, as one list (`prefetch a.csv b.csv`): each its own
    /// table with its own header, the answers' order going on across them.
    public let following: [URLList]
    /// The rows of a table's URLs, by the index of their answer.
    public let rows = RowBook()
    private let credits = CreditGate()
    private let stopped = Atomic<Bool>(false)
    /// Counts a regular file's URL lines ahead of the reader, for progress.
    private let counter = WorkerThread()

    public init(descriptor: Int32, name: String, format: ListFormat = ListFormat(), following: [URLList] = []) {
        self.descriptor = descriptor
        self.name = name
        self.format = format
        self.following = following
    }

    /// The lists given, read one after the other as one.
    public static func chained(_ lists: [URLList]) -> URLList? {
        guard let first = lists.first else { return nil }
        return URLList(descriptor: first.descriptor, name: first.name, format: first.format, following: Array(lists.dropFirst()))
    }

    /// Every file read, in order: this one, then those following.
    private var sources: [(descriptor: Int32, name: String, format: ListFormat)] {
        [(descriptor, name, format)] + following.map { ($0.descriptor, $0.name, $0.format) }
    }

    /// The list in the file at `path`. Its descriptor stays open until the
    /// process ends: the reader thread may still be in `read` when a run is
    /// interrupted. Throws EISDIR for a folder.
    public static func open(path: String, format: ListFormat = ListFormat()) throws(SystemError) -> URLList {
        let descriptor = try SystemCall.open(path, O_RDONLY | O_CLOEXEC).get("open", path: path)
        if case .success(let status) = SystemCall.fstat(descriptor), status.st_mode & S_IFMT == S_IFDIR {
            SystemCall.close(descriptor)
            throw SystemError("read", path: path, errno: .isDirectory)
        }
        return URLList(descriptor: descriptor, name: path, format: format)
    }

    /// Starts reading; `emit` is called on the reader thread with items in
    /// batches (one per read, or fewer when the window is full), at most
    /// `window` URLs ahead of `release(_:)` calls.
    func start(window: Int, emit: @escaping @Sendable ([Item]) -> Void) throws(SystemError) {
        credits.give(window)
        // Counted from where the reader starts: a shell may have read some of the file already.
        var counted: [(descriptor: Int32, start: off_t, format: ListFormat)] = []
        for source in sources {
            guard case .success(let start) = SystemCall.lseek(source.descriptor, 0, SEEK_CUR),
                  case .success(let status) = SystemCall.fstat(source.descriptor), status.st_mode & S_IFMT == S_IFREG else {
                counted = []
                break
            }
            counted.append((source.descriptor, start, source.format))
        }
        if !counted.isEmpty {
            try counter.start { [self] in
                var total = 0
                for file in counted {
                    guard let count = URLList.countURLLines(file.descriptor, from: file.start, format: file.format, stopped: stopped) else { return }
                    total += count
                }
                emit([.length(total)])
            }
        }
        // Detached: it may be blocked reading a pipe nobody writes to when the
        // run ends, and no read can be called off; the exit ends it.
        try WorkerThread.startDetached { [self] in read(emit) }
    }

    /// `count` URLs were answered: the reader may read that many more.
    func release(_ count: Int) { credits.give(count) }

    /// Stops reading (the run ended or was interrupted) and waits for the
    /// line counter, which reads a regular file and so always ends soon.
    func stop() {
        stopped.store(true, ordering: .relaxed)
        credits.close()
        counter.join()
    }

    private func read(_ emit: @Sendable ([Item]) -> Void) {
        var held = 0
        // Each URL or refused row takes the next answer's index, in the list's order.
        var ordinal = 0
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        for (position, source) in sources.enumerated() {
            var parser = ListParser(format: source.format)
            // A bad row of a later file names its file (line numbers start again in each).
            let file = position == 0 ? nil : source.name
            while !stopped.load(ordering: .relaxed) {
                let count: Int
                switch buffer.withUnsafeMutableBytes({ SystemCall.read(source.descriptor, $0.baseAddress, $0.count) }) {
                case .success(let read): count = read
                case .failure(let errno):
                    emit([.failed(SystemError("read", path: source.name, errno: errno))])
                    return
                }
                let lines: [ListParser.Parsed]
                do {
                    lines = count == 0 ? try parser.finish() : try parser.push(buffer[0..<count])
                } catch {
                    emit([.failed(SystemError("read", path: source.name, errno: .ioError, detail: error.reason))])
                    return
                }
                guard read(lines, file: file, held: &held, ordinal: &ordinal, emit) else { return }
                if count == 0 { break }
            }
        }
        if !stopped.load(ordering: .relaxed) { emit([.end]) }
    }

    /// Hands over `lines` in batches, as credits allow; false when the run stopped giving them.
    private func read(_ lines: [ListParser.Parsed], file: String?, held: inout Int, ordinal: inout Int,
                      _ emit: @Sendable ([Item]) -> Void) -> Bool {
        var batch: [Item] = []
        for (index, (parsed, row)) in lines.enumerated() {
            var item = parsed
            if let file {
                switch parsed {
                case .badRow(let line, let reason): item = .badRow(line: line, reason: "in \(file): " + reason)
                case .rejected(let text, let line, let reason): item = .rejected(text, line: line, reason: "in \(file): " + reason)
                default: break
                }
            }
            if let row, !row.fields.isEmpty { rows.deposit(row, at: ordinal) }
            ordinal += 1
            if held == 0 {
                // Out of credits: hand over what is ready, then wait for answers.
                if !batch.isEmpty { emit(batch) }
                batch.removeAll()
                held = credits.take(upTo: lines.count - index)
                if held == 0 { return false }
            }
            held -= 1
            batch.append(item)
            // Small batches keep the pipeline flowing: the next is read (and
            // looked up) while the manager answers this one.
            if batch.count == URLList.batchSize {
                emit(batch)
                batch.removeAll(keepingCapacity: true)
            }
        }
        if !batch.isEmpty { emit(batch) }
        return true
    }

    /// The columns the header of the CSV or TSV table at `path` names, read before a run starts
    /// (a column option misspelt is said then); nil for other lists and standard input.
    public static func columns(ofTableAt path: String, format: ListFormat) -> [String]? {
        ListParser.columns(ofTableAt: path, format: format)
    }

    /// Why the header of the CSV or TSV table at `path` cannot be read (no URL column), read before a run starts.
    public static func headerProblem(ofTableAt path: String, format: ListFormat) -> String? {
        ListParser.header(ofTableAt: path, format: format)?.problem
    }

    /// A line as an item; nil for blank and comment lines.
    static func item(for line: LineSplitter.Line) -> Item? {
        if line.truncated {
            let start = String(decoding: line.bytes.prefix(60), as: UTF8.self)
            return .rejected(start + "…", line: line.number, reason: "longer than \(maximumLineLength / 1024) KiB")
        }
        guard var bytes = urlBytes(of: line) else { return nil }
        // A comment after the URL ("URL  # note"): no URL holds a raw blank, so a blank then '#' ends it.
        // Looked for from each '#' (most lines have none): this runs on every line of a list.
        var search = bytes.startIndex
        while let hash = bytes[search...].firstIndex(of: UInt8(ascii: "#")) {
            var start = hash
            while start > bytes.startIndex, bytes[start - 1] == 0x20 || bytes[start - 1] == 0x09 { start -= 1 }
            if start < hash {
                bytes = bytes[..<start]
                break
            }
            search = hash + 1
        }
        return .url(URLText.decode(bytes), line: line.number)
    }

    /// Whether `line` is an item (a URL, or a line too long), as `item(for:)` would say, without
    /// making its string: the count of a list before a run reads every line once more.
    static func isItem(_ line: LineSplitter.Line) -> Bool {
        line.truncated || urlBytes(of: line) != nil
    }

    /// A line's bytes without a byte order mark or the blanks around them; nil for a blank or comment line.
    private static func urlBytes(of line: LineSplitter.Line) -> ArraySlice<UInt8>? {
        var bytes = line.bytes
        if line.number == 1, bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        while let last = bytes.last, last == 0x20 || last == 0x09 || last == 0x0D { bytes = bytes.dropLast() }
        while let first = bytes.first, first == 0x20 || first == 0x09 { bytes = bytes.dropFirst() }
        guard let first = bytes.first, first != UInt8(ascii: "#") else { return nil }
        return bytes
    }

    /// Counts the URL lines (a table's rows) of a regular file from `start` with `pread`, leaving the
    /// reader's offset alone; nil when it cannot.
    static func countURLLines(_ descriptor: Int32, from start: off_t, format: ListFormat, stopped: borrowing Atomic<Bool>) -> Int? {
        var parser = ListParser(format: format)
        parser.countsOnly = true
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        var offset = start
        var count = 0
        while !stopped.load(ordering: .relaxed) {
            guard case .success(let read) = buffer.withUnsafeMutableBytes({
                SystemCall.pread(descriptor, $0.baseAddress, $0.count, offset)
            }) else { return nil }
            offset += off_t(read)
            guard let items = try? (read == 0 ? parser.finish() : parser.push(buffer[0..<read])) else { return nil }
            count += items.count
            if read == 0 { return count + parser.counted }
        }
        return nil
    }
}

/// Splits a byte stream into numbered lines; a line longer than the limit is
/// kept only up to it and marked truncated, so memory stays bounded.
struct LineSplitter {
    struct Line: Equatable {
        /// The line's bytes: a slice of the chunk it came in when it lies within one (no copy).
        var bytes: ArraySlice<UInt8>
        var number: Int
        var truncated: Bool
    }

    let maximumLength: Int
    private var current: [UInt8] = []
    private var truncated = false
    private var number = 0

    init(maximumLength: Int) {
        self.maximumLength = maximumLength
    }

    /// The lines completed by `chunk`.
    mutating func push(_ chunk: ArraySlice<UInt8>) -> [Line] {
        var lines: [Line] = []
        var start = chunk.startIndex
        while let newline = chunk[start...].firstIndex(of: 0x0A) {
            if current.isEmpty, !truncated, newline - start <= maximumLength {
                // Within this chunk, as nearly every line is: handed over where it lies.
                number += 1
                lines.append(Line(bytes: chunk[start..<newline], number: number, truncated: false))
            } else {
                append(chunk[start..<newline])
                lines.append(take())
            }
            start = newline + 1
        }
        append(chunk[start...])
        return lines
    }

    /// The last line, when the stream does not end with a newline.
    mutating func finish() -> [Line] {
        current.isEmpty && !truncated ? [] : [take()]
    }

    private mutating func append(_ bytes: ArraySlice<UInt8>) {
        let room = maximumLength - current.count
        if bytes.count > room {
            current.append(contentsOf: bytes.prefix(max(0, room)))
            truncated = true
        } else {
            current.append(contentsOf: bytes)
        }
    }

    private mutating func take() -> Line {
        number += 1
        defer {
            current.removeAll(keepingCapacity: true)
            truncated = false
        }
        return Line(bytes: current[...], number: number, truncated: truncated)
    }
}

/// A counting semaphore the reader waits on: how many more URLs it may hand
/// over. Taken in bulk and given back in bulk, so that a fast list costs few
/// wake-ups.
final class CreditGate: Sendable {
    private struct Credits {
        var available = 0
        var closed = false
    }

    private let credits = ConditionLock(Credits())

    func give(_ count: Int) {
        guard count > 0 else { return }
        credits.withLock { $0.available += count }
        credits.signal()
    }

    /// Between 1 and `limit` credits, waiting for at least one; 0 once closed.
    func take(upTo limit: Int) -> Int {
        credits.wait(until: { $0.available > 0 || $0.closed }) { credits in
            guard !credits.closed else { return 0 }
            let granted = min(credits.available, max(1, limit))
            credits.available -= granted
            return granted
        }
    }

    func close() {
        credits.withLock { $0.closed = true }
        credits.broadcast()
    }
}
