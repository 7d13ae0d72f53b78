#if canImport(Glibc)
import Glibc
#endif
/// Turns the bytes of a list, as they are read, into its items: the URL of each
/// line, or of each row of a CSV, TSV or JSONL table with the row's other
/// columns. A gzipped list (told by its first bytes) is inflated first. A row
/// that cannot be taken is an item that says why, with its line number; a
/// table whose header lacks the URL column fails the whole list.
struct ListParser {
    /// A URL with its row's other columns (nil for plain lines), or another item.
    typealias Parsed = (item: URLList.Item, row: JSONObject?)

    /// Why the list as a whole cannot be read.
    struct Failure: Error, Equatable {
        let reason: String
    }

    /// The longest row of a table taken (a caption can be long); longer ones are refused.
    static let maximumRowLength = 1 << 20

    let format: ListFormat
    private var lines: LineSplitter
    private var delimited: DelimitedSplitter
    /// A table's column names, once its header was read.
    private var header: [String]?
    private var urlIndex = 0
    private var gzip: GzipDecoder?
    /// Whether the first bytes were looked at (for gzip's signature).
    private var sniffed = false
    private var held: [UInt8] = []
    /// The same for what a gzipped list inflates to: a gzipped Parquet file is still one.
    private var inflatedSniffed = false
    private var inflatedHeld: [UInt8] = []
    /// Lines are only counted, not made into items (`URLList.countURLLines`): `counted` says how many.
    var countsOnly = false
    private(set) var counted = 0

    init(format: ListFormat) {
        self.format = format
        lines = LineSplitter(maximumLength: format.kind == .jsonl ? ListParser.maximumRowLength : URLList.maximumLineLength)
        delimited = DelimitedSplitter(delimiter: format.kind == .tsv ? 0x09 : UInt8(ascii: ","), maximumLength: ListParser.maximumRowLength,
                                      keepsQuotesInFields: format.kind == .tsv)
    }

    mutating func push(_ bytes: ArraySlice<UInt8>) throws(Failure) -> [Parsed] {
        var bytes = bytes
        if !sniffed {
            // Four bytes tell gzip and the containers a table may come in: held until there are four.
            held += bytes
            guard held.count >= 4 else { return [] }
            try sniff()
            bytes = held[...]
            held = []
        }
        if let gzip {
            // Parsed a buffer at a time as it inflates: a chunk that inflates a thousandfold is never held whole.
            var parsed: [Parsed] = []
            do {
                try gzip.push(bytes) { (piece: ArraySlice<UInt8>) throws(Failure) in parsed += try parseInflated(piece) }
            } catch {
                throw Failure(reason: error.reason)
            }
            if let failure = gzip.pending as? Failure { throw failure }
            return parsed
        }
        return try parse(bytes, ending: false)
    }

    /// The columns a CSV or TSV table at `path` names in its header line (gzipped too), read from
    /// its first bytes before a run starts; nil for other lists, or when they cannot be read.
    static func columns(ofTableAt path: String, format: ListFormat) -> [String]? {
        header(ofTableAt: path, format: format)?.columns
    }

    /// The header of the CSV or TSV table at `path` as its first bytes give it: its columns, or why
    /// it cannot be read (no URL column); nil for other lists, or when they cannot be read.
    static func header(ofTableAt path: String, format: ListFormat) -> (columns: [String]?, problem: String?)? {
        guard format.isTable, format.kind != .jsonl, path != "-",
              case .success(let status) = SystemCall.stat(following: path), status.st_mode & S_IFMT == S_IFREG,
              let head = try? FileSystem.readPrefix(path, count: 1 << 20) else { return nil }
        var parser = ListParser(format: format)
        do throws(Failure) { _ = try parser.push(head[...]) } catch { return (nil, error.reason) }
        return (parser.header, nil)
    }

    mutating func finish() throws(Failure) -> [Parsed] {
        var rest: ArraySlice<UInt8> = []
        if !sniffed {
            try sniff()
            rest = held[...]
        }
        var parsed: [Parsed] = []
        if let gzip {
            do { try gzip.finish() } catch { throw Failure(reason: error.reason) }
            if !inflatedSniffed { parsed += try releaseInflated() }
        }
        parsed += try parse(rest, ending: false)
        parsed += try parse([], ending: true)
        if format.isTable, header == nil, format.kind != .jsonl {
            throw Failure(reason: "the table is empty: it has no header line naming its columns")
        }
        return parsed
    }

    /// Binary containers a data set's table often comes in, which are read as nothing else.
    private static let containers: [(magic: [UInt8], name: String)] = [
        (Array("PAR1".utf8), "a Parquet file"), (Array("ARROW1".utf8.prefix(4)), "an Arrow file"),
        // Feather version 1, and an Arrow IPC stream (`.arrows`), which starts with the continuation marker.
        (Array("FEA1".utf8), "a Feather file"), ([0xFF, 0xFF, 0xFF, 0xFF], "an Arrow stream"),
        ([0x50, 0x4B, 0x03, 0x04], "a zip archive"), ([0x28, 0xB5, 0x2F, 0xFD], "zstd-compressed"),
        ([0xFD, 0x37, 0x7A, 0x58], "xz-compressed"), (Array("BZh".utf8), "bzip2-compressed"),
    ]

    /// What a gzipped list inflates to, its first bytes looked at before any is parsed.
    private mutating func parseInflated(_ piece: ArraySlice<UInt8>) throws(Failure) -> [Parsed] {
        guard !inflatedSniffed else { return try parse(piece, ending: false) }
        inflatedHeld += piece
        guard inflatedHeld.count >= 4 else { return [] }
        return try releaseInflated()
    }

    private mutating func releaseInflated() throws(Failure) -> [Parsed] {
        inflatedSniffed = true
        try ListParser.refuseContainer(inflatedHeld, gzipped: true)
        defer { inflatedHeld = [] }
        return try parse(inflatedHeld[...], ending: false)
    }

    /// Looks at the first bytes: gzip is inflated as it comes; a container imgcache does not read is
    /// refused before a line of it is taken for a URL.
    private mutating func sniff() throws(Failure) {
        sniffed = true
        if held.starts(with: [0x1F, 0x8B]) {
            do { gzip = try GzipDecoder() } catch { throw Failure(reason: error.reason) }
            return
        }
        try ListParser.refuseContainer(held, gzipped: false)
    }

    /// Refuses `start` when it is the beginning of a container imgcache does not read.
    private static func refuseContainer(_ start: [UInt8], gzipped: Bool) throws(Failure) {
        if let container = ListParser.containers.first(where: { start.starts(with: $0.magic) }) {
            throw Failure(reason: "it is \(container.name)\(gzipped ? ", gzipped" : ""): imgcache reads lines of URLs, CSV, TSV or JSONL (maybe gzipped); "
                          + "convert it first, as \"Parquet and Arrow tables\" in DATASETS.md shows (for Parquet: python3 -c \"import "
                          + "pyarrow.parquet as p, pyarrow.csv as c; c.write_csv(p.read_table('FILE.parquet'), 'FILE.csv')\")")
        }
    }

    private mutating func parse(_ bytes: ArraySlice<UInt8>, ending: Bool) throws(Failure) -> [Parsed] {
        switch format.kind {
        case .lines:
            let found = ending ? lines.finish() : lines.push(bytes)
            guard !countsOnly else {
                counted += found.reduce(0) { $0 + (URLList.isItem($1) ? 1 : 0) }
                return []
            }
            return found.compactMap { URLList.item(for: $0).map { ($0, nil) } }
        case .jsonl:
            return (ending ? lines.finish() : lines.push(bytes)).compactMap(jsonRow)
        case .csv, .tsv:
            var parsed: [Parsed] = []
            for record in ending ? delimited.finish() : delimited.push(bytes) {
                if let row = try delimitedRow(record) { parsed.append(row) }
            }
            return parsed
        }
    }

    private mutating func delimitedRow(_ record: DelimitedSplitter.Record) throws(Failure) -> Parsed? {
        if let problem = record.problem {
            return (.badRow(line: record.line, reason: problem), nil)
        }
        var texts: [String] = []
        for field in record.fields {
            guard let text = String(validating: field, as: UTF8.self) else {
                return (.badRow(line: record.line, reason: "not UTF-8"), nil)
            }
            texts.append(text)
        }
        guard let header else {
            var names = texts
            if let first = names.first, first.hasPrefix("\u{FEFF}") { names[0] = String(first.dropFirst()) }
            names = names.map { $0.trimmingSpaces }
            // Named twice: the last one, as for a row's other duplicate names.
            guard let index = names.lastIndex(of: format.urlColumn)
                    ?? names.lastIndex(where: { $0.lowercased() == format.urlColumn.lowercased() }) else {
                let listed = names.prefix(12).map { "\"\($0)\"" }.joined(separator: ", ") + (names.count > 12 ? ", …" : "")
                throw Failure(reason: "no column \"\(format.urlColumn)\" in the header (line \(record.line): \(listed)); "
                              + "name the URL's column with --url-column")
            }
            self.header = names
            urlIndex = index
            return nil
        }
        guard texts.count <= header.count else {
            return (.badRow(line: record.line, reason: "\(texts.count) fields, but the header names \(header.count)"), nil)
        }
        var row = JSONObject()
        // A name the header gives twice: the last column's text, as for a JSON object's duplicate keys.
        // An earlier column of the URL's name is one the URL's column replaces: not kept.
        for (index, text) in texts.enumerated() where index != urlIndex && header[index] != header[urlIndex] {
            row.set(header[index], .string(text))
        }
        let url = urlIndex < texts.count ? texts[urlIndex].trimmingSpaces : ""
        guard !url.isEmpty else {
            return (.badRow(line: record.line, reason: "no URL in column \"\(header[urlIndex])\""), row)
        }
        return (ListParser.item(url, row: row, line: record.line), row)
    }

    private func jsonRow(_ line: LineSplitter.Line) -> Parsed? {
        if line.truncated {
            return (.badRow(line: line.number, reason: "a row longer than \(ListParser.maximumRowLength / 1024) KiB"), nil)
        }
        var bytes = line.bytes[...]
        if line.number == 1, bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        guard bytes.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }) else { return nil }
        let value: JSONValue
        do { value = try JSONParser.parse(Array(bytes)) } catch {
            return (.badRow(line: line.number, reason: "not JSON: \(error)"), nil)
        }
        guard case .object(let object) = value else {
            return (.badRow(line: line.number, reason: "not a JSON object"), nil)
        }
        var row = JSONObject()
        var url: JSONValue?
        // Duplicate keys: the last one's value, as JSON parsers read them (Python's json, jq).
        for (name, member) in object.fields {
            if name == format.urlColumn { url = member } else { row.set(name, member) }
        }
        guard case .string(let text)? = url, !text.trimmingSpaces.isEmpty else {
            var reason = "member \"\(format.urlColumn)\" is not a URL string"
            if url == nil { reason = "no member \"\(format.urlColumn)\"" }
            // An empty string (or blanks): no URL, as an empty CSV cell says.
            if case .string? = url { reason = "no URL in member \"\(format.urlColumn)\"" }
            return (.badRow(line: line.number, reason: reason), row)
        }
        return (ListParser.item(text.trimmingSpaces, row: row, line: line.number), row)
    }

    /// The row's item: `url` pinned by the row's `sha256` column (unless empty or null); a row
    /// whose pin is not text, or whose column and URL fragment pin different bytes, is a bad row.
    static func item(_ url: String, row: JSONObject, line: Int) -> URLList.Item {
        guard let value = row.fields.last(where: { $0.0 == "sha256" })?.1 else { return .url(url, line: line) }
        let hex: String
        switch value {
        case .string(let text): hex = text.trimmingSpaces
        case .null: return .url(url, line: line)
        default: return .badRow(line: line, reason: "its sha256 (\(value.serialized)) is not 64 hexadecimal digits")
        }
        guard !hex.isEmpty else { return .url(url, line: line) }
        if let fragment = url.firstRange(of: "#sha256=") {
            let given = url[fragment.upperBound...]
            guard given.lowercased() == hex.lowercased() else {
                return .badRow(line: line, reason: "its URL pins sha256 \(given) and its sha256 column \(hex)")
            }
            return .url(url, line: line)
        }
        return .url(URLText.withoutFragment(url) + "#sha256=" + hex, line: line)
    }
}

extension String {
    /// Without spaces and tabs at either end.
    var trimmingSpaces: String {
        var text = self[...]
        while let first = text.first, first == " " || first == "\t" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\t" || last == "\r" { text = text.dropLast() }
        return String(text)
    }
}
