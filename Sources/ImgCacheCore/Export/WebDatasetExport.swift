#if canImport(Glibc)
import Glibc
#endif

/// `export --webdataset DIR`: a list's answers from the cache, in the list's
/// order, as WebDataset shards (`00000.tar`, `00001.tar`, … of `shardSize`
/// samples). A sample is `KEY.EXT` (the image, or its variant), `KEY.json`
/// (its URL, SHA-256, size, format and the row's columns) and `KEY.txt` (the
/// caption column's text, when one is named); KEY is the row's position in the
/// list, nine digits. `manifest.jsonl` says what became of every row. The same
/// list and cache give the same bytes.
///
/// All or nothing: shards and manifest are written under partial names and
/// put in place only by `finish()`, after the whole list; an export that
/// fails or is interrupted leaves the folder as it found it. A folder is an
/// export's when it holds the marker `.imgcache-export` (written first, so that
/// an export killed midway leaves a folder the next one tidies); any other that
/// is not empty is refused, so that nothing of the user's is ever replaced. With
/// a `DataSetUpload` the folder only holds each shard until it is sent, and the
/// manifest goes to the store last. Used by one thread.
public final class WebDatasetExport {
    /// What an export did.
    public struct Counts: Equatable, Sendable {
        public var rows = 0
        public var exported = 0
        public var missing = 0
        public var failed = 0
        public var optedOut = 0
        public var filtered = 0
        public var shards = 0
        /// Rows by status and reason (`missing`: `never_fetched`; `failed`: the failure's kind; `filtered`: the filter).
        public var reasons: [String: [String: Int]] = [:]
    }

    /// Which cached images a data set takes (img2dataset's `min_image_size`, `max_aspect_ratio`):
    /// the others are `filtered`, with the reason, not failed.
    public struct Filters: Equatable, Sendable {
        /// `--min-size WxH`: the image as served (upright) at least this wide and high.
        public var minimumSize: ImageTransform.BoxSize?
        /// `--max-aspect R`: the long side at most R times the short one.
        public var maximumAspect: Double?
        /// `--max-pixels`, when given to export: cached images over it are left out.
        public var maximumPixels: PixelLimit?

        public init() {}

        /// Why an image of `width` x `height` is left out; nil when it is taken. An image of unknown
        /// size cannot be judged: left out when a filter is set, rather than let through unchecked.
        public func refusal(width: Int?, height: Int?) -> (kind: String, reason: String)? {
            guard let width, let height, width > 0, height > 0 else {
                guard minimumSize != nil || maximumAspect != nil || maximumPixels != nil else { return nil }
                return ("unknown_size", "the size of the image as served is not known (only a variant made by an older imgcache is cached: "
                        + "prefetch it again with --refresh), so the filters cannot judge it")
            }
            if let box = minimumSize, width < box.width ?? 0 || height < box.height ?? 0 {
                return ("min_size", "\(width)x\(height) is smaller than \(box) (--min-size)")
            }
            if let limit = maximumPixels, !limit.allows(width: width, height: height) {
                return ("max_pixels", "\(width)x\(height) is over the limit of \(limit) (--max-pixels)")
            }
            if let limit = maximumAspect {
                let aspect = Double(max(width, height)) / Double(min(width, height))
                if aspect > limit {
                    return ("max_aspect", "\(width)x\(height) has an aspect ratio of \(Double(Int(aspect * 100)) / 100), over \(limit) (--max-aspect)")
                }
            }
            return nil
        }
    }

    /// What rows are left out by their image's size.
    public var filters = Filters()

    /// Why an export cannot go on.
    public struct Failure: Error, CustomStringConvertible {
        public let reason: String
        public var description: String { reason }
    }

    public let directory: String
    public let shardSize: Int
    public let captionColumn: String?
    /// The table's URL column: a caption may be taken from it too.
    public let urlColumn: String
    public let includesOptedOut: Bool
    public private(set) var counts = Counts()

    /// How the samples are laid out: WebDataset tars, or img2dataset's "files" folders.
    public enum Layout: Sendable { case webdataset, files }
    public let layout: Layout
    private var shard: ShardWriter?
    private var inShard = 0
    private let manifest: Int32
    private let manifestPath: String
    /// Manifest lines not written yet: written 64 KiB at a time, not a system call a row.
    private var pending: [UInt8] = []
    /// Shards written whole, under their partial names until `finish()`.
    private var finished: [ShardWriter] = []
    private var committed = false
    /// This export marked the folder: one that fails takes the mark away with the rest.
    private var madeMarker = false
    /// This export made the folder: one that fails removes it again (when nothing else was put there).
    private var madeDirectory = false
    /// The folder, open and locked (`flock`) for the whole export: a second export into it at the
    /// same time is refused rather than mixing its shards with this one's.
    private var folderLock: Int32 = -1
    /// `--to`: where the shards go as they are finished, the folder only holding them until then.
    private let upload: DataSetUpload?
    /// The caption column was found in a row.
    public private(set) var sawCaptionColumn = false
    /// Each finished shard's rows (`NNNNN_stats.json`), and the rows since the last one was finished.
    private var shardStatistics: [ShardStatistics] = []
    private var rowsSinceShard = ShardStatistics()

    /// The fields of KEY.json imgcache writes; a row's column of one of these names goes under `row`.
    public static let sampleFields: Set<String> = ["key", "url", "sha256", "width", "height", "format", "original_width", "original_height",
                                                         "dominant_color", "thumbhash", "row", "status", "error_message"]

    /// The file that marks a folder as an export's.
    public static let markerName = ".imgcache-export"

    /// The name of shard `number`.
    public static func shardName(_ number: Int) -> String { padded(number, 5) + ".tar" }

    /// The name of shard `number` in this export's layout (`00000.tar`, or the folder `00000`).
    private func shardName(_ number: Int) -> String {
        layout == .files ? WebDatasetExport.padded(number, 5) : WebDatasetExport.shardName(number)
    }

    static func padded(_ number: Int, _ digits: Int) -> String {
        let text = String(number)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }

    /// Makes `directory` if needed. One that holds other files than an export's is refused,
    /// so that an export never mixes with (or replaces) what is not its own.
    public init(directory given: String, shardSize: Int, captionColumn: String?, urlColumn: String = ListFormat.defaultURLColumn,
                includesOptedOut: Bool, layout: Layout = .webdataset, upload: DataSetUpload? = nil) throws(Failure) {
        self.layout = layout
        self.upload = upload
        // A link to a folder is written through, as -o writes through a link: the folder it leads to.
        var directory = given
        if (try? FileSystem.status(given))??.isSymbolicLink == true, let resolved = realpath(given, nil) {
            directory = String(cString: resolved)
            free(resolved)
        }
        self.directory = directory
        self.shardSize = shardSize
        self.captionColumn = captionColumn
        self.urlColumn = urlColumn
        self.includesOptedOut = includesOptedOut
        do {
            madeDirectory = (try? FileSystem.status(directory)) ?? nil == nil
            try FileSystem.makeDirectories(directory, mode: 0o777, followingLinks: true)
            folderLock = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if folderLock >= 0, flock(folderLock, LOCK_EX | LOCK_NB) != 0 {
                let busy = errno == EWOULDBLOCK
                close(folderLock)
                folderLock = -1
                if busy { throw Failure(reason: "another export is writing \(directory) now: wait for it to end, or give another folder") }
            }
            let names = try DirectoryHandle(directory).list().map(\.name)
            // An earlier export's folder (its marker) may be written again; any other must be empty.
            if !names.contains(WebDatasetExport.markerName), let stranger = names.sorted().first {
                throw Failure(reason: "\(directory) holds \(stranger), and no export made the folder: give an empty or new folder")
            }
            if let stranger = names.first(where: { !WebDatasetExport.isOwn($0) }) {
                throw Failure(reason: "\(directory) holds \(stranger), which no export wrote: give an empty or new folder")
            }
            // What an export killed part way left (its partial shards, tars or folders): no export is
            // writing here (the folder is locked), so they are nobody's now.
            if upload == nil {
                for name in names where name.hasPrefix(".") && name.hasSuffix(".partial") && name != ".manifest.jsonl.partial" {
                    let path = directory + "/" + name
                    if (try? FileSystem.status(path))??.isDirectory == true { FolderShardWriter.removeFlat(path) } else { try? FileSystem.remove(path) }
                }
            }
        } catch let error as Failure {
            if folderLock >= 0 { close(folderLock) }
            throw error
        } catch {
            if folderLock >= 0 { close(folderLock) }
            throw Failure(reason: "cannot use \(directory): \(error)")
        }
        // Marked before anything is written: an export killed before it finished (SIGKILL, a crash)
        // leaves partial files in a folder the next export knows as its own and tidies.
        let marker = directory + "/" + WebDatasetExport.markerName
        if (try? FileSystem.status(marker)) ?? nil == nil, upload == nil {
            if case .success(let descriptor) = SystemCall.open(marker, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o666) {
                SystemCall.close(descriptor)
                madeMarker = true
            }
        }
        manifestPath = directory + "/manifest.jsonl"
        let partial = directory + "/.manifest.jsonl.partial"
        switch SystemCall.open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o666) {
        case .success(let descriptor): manifest = descriptor
        case .failure(let errno):
            if folderLock >= 0 { close(folderLock) }
            throw Failure(reason: SystemError("create", path: partial, errno: errno).description)
        }
    }

    deinit {
        SystemCall.close(manifest)
        // Unlocked last (closing lets the lock go), once nothing of this export is written any more.
        defer { if folderLock >= 0 { close(folderLock) } }
        // Not finished (a failure, a signal): nothing of this export stays.
        guard !committed else { return }
        upload?.abandon()
        try? FileSystem.remove(directory + "/.manifest.jsonl.partial")
        for written in finished { try? FileSystem.remove(written.partialPath) }
        if madeMarker { try? FileSystem.remove(directory + "/" + WebDatasetExport.markerName) }
        // The shard being written goes first (its partial file with it), then the folder, if empty.
        shard = nil
        if madeDirectory, upload == nil { rmdir(directory) }
    }

    /// A name an export writes: its shards, its manifest, and their partial files.
    private static func isOwn(_ name: String) -> Bool {
        if name == markerName || name == "manifest.jsonl" || name == ".manifest.jsonl.partial" { return true }
        var bare = name.hasPrefix(".") && name.hasSuffix(".partial") ? String(name.dropFirst().dropLast(8)) : name
        if name.hasPrefix("."), name.hasSuffix(".old") { bare = String(name.dropFirst().dropLast(4)) }
        // A tar (`00000.tar`), or a folder of files (`00000`), and a shard's statistics (`00000_stats.json`).
        if bare.count == 5, bare.allSatisfy(\.isNumber) { return true }
        if bare.count == 16, bare.hasSuffix("_stats.json"), bare.prefix(5).allSatisfy(\.isNumber) { return true }
        return bare.count == 9 && bare.hasSuffix(".tar") && bare.dropLast(4).allSatisfy(\.isNumber)
    }

    /// The answer for the row at `index` (its URL, and its other columns).
    /// `lastFailure`: the failure remembered for a row not in the cache, which then failed rather than was never fetched.
    /// What the cache holds of a URL not in it as asked: only other variants of it (made with
    /// `--no-original`, which keeps no original to make the one asked for from).
    public struct OtherVariants: Sendable {
        /// The server opted the image out of AI training.
        public let optedOut: Bool
        public init(optedOut: Bool) { self.optedOut = optedOut }
    }

    public func add(index: Int, url: String, result: Result<FetchResult, FetchError>, row: JSONObject?,
                    lastFailure: FailedURLStore.Record? = nil, otherVariants: OtherVariants? = nil) throws(Failure) {
        counts.rows += 1
        let key = WebDatasetExport.padded(index, 9)
        var line = JSONObject()
        line.add("key", key)
        switch result {
        case .success(let fetched):
            let path = fetched.variants.first?.path ?? fetched.path
            let metadata = fetched.variants.first?.metadata ?? fetched.metadata
            let originalWidth = fetched.variants.isEmpty ? metadata.uprightSize.width : fetched.originalWidth
            let originalHeight = fetched.variants.isEmpty ? metadata.uprightSize.height : fetched.originalHeight
            if metadata.optedOut, !includesOptedOut {
                counts.optedOut += 1
                line.add("url", RemoteURL.redacted(url))
                return try write(line, status: "opted_out", kind: "noai",
                                 error: "the server opted it out of AI training (X-Robots-Tag noai); --include-opted-out takes it", row: row)
            }
            if let (kind, reason) = filters.refusal(width: originalWidth, height: originalHeight) {
                counts.filtered += 1
                line.add("url", RemoteURL.redacted(url))
                return try write(line, status: "filtered", kind: kind, error: reason, row: row)
            }
            let bytes: [UInt8]
            do throws(SystemError) {
                guard let read = try FileSystem.readFile(path, limit: 1 << 31) else { throw SystemError("read", path: path, errno: .noSuchFile) }
                bytes = read
            } catch {
                counts.failed += 1
                line.add("url", RemoteURL.redacted(url))
                line.add("status", "failed")
                line.add("error", "cannot read \(path): \(error.reason)")
                rowsSinceShard.record(status: "failed", reason: "cache_unreadable")
                return try write(line)
            }
            let digest: String
            do { digest = try SHA256.hex(bytes) } catch { throw Failure(reason: error.reason) }
            let shardName = try sampleShard()
            var sample = JSONObject()
            sample.add("key", key)
            sample.add("url", RemoteURL.redacted(url))
            sample.add("sha256", digest)
            sample.add("width", metadata.uprightSize.width)
            sample.add("height", metadata.uprightSize.height)
            sample.add("format", metadata.format?.rawValue)
            // The image as served, upright: what img2dataset's original_width and original_height say.
            sample.add("original_width", originalWidth)
            sample.add("original_height", originalHeight)
            // With --placeholders: what the image looks like at a glance, for filtering and previews.
            if let found = fetched.placeholder?.metadata.placeholder {
                sample.add("dominant_color", found.dominantColor.description)
                sample.add("thumbhash", found.thumbHashBase64)
            }
            // A column named like one of the fields above is kept under `row`, not dropped or written twice.
            var clashing = JSONObject()
            var caption: String?
            if captionColumn == urlColumn {
                caption = url
                sawCaptionColumn = true
            }
            for (name, value) in row?.fields ?? [] {
                if WebDatasetExport.sampleFields.contains(name) { clashing.set(name, value) } else { sample.add(name, value) }
                if name == captionColumn {
                    caption = WebDatasetExport.text(of: value)
                    sawCaptionColumn = true
                }
            }
            if !clashing.fields.isEmpty { sample.add("row", .object(clashing)) }
            // img2dataset's fields of a sample: how it went, and the caption under its own name whatever its column's.
            sample.add("status", "success")
            sample.add("error_message", JSONValue.null)
            if captionColumn != nil { sample.set("caption", caption.map(JSONValue.string) ?? .null) }
            let ext = metadata.format?.fileExtension ?? "img"
            do {
                try shard?.add(key + "." + ext, bytes)
                try shard?.add(key + ".json", Array((sample.serialized + "\n").utf8))
                if let caption { try shard?.add(key + ".txt", Array(caption.utf8)) }
            } catch {
                throw Failure(reason: "cannot write \(shardName): \(error.reason)")
            }
            inShard += 1
            counts.exported += 1
            rowsSinceShard.record(status: "exported", reason: "")
            line.add("url", RemoteURL.redacted(url))
            line.add("status", "exported")
            line.add("shard", shardName)
            counts.reasons["exported", default: [:]]["", default: 0] += 1
            try write(line.with(row: row))
            if inShard == shardSize { try closeShard() }
        case .failure(let error):
            if case .badRow(let number, _) = error {
                line.add("url", JSONValue.null)
                line.add("line", number)
            } else {
                line.add("url", RemoteURL.redacted(url))
            }
            // Left out by the pixel limit (img2dataset's max_image_area), wherever it refused the image.
            if let reason = WebDatasetExport.pixelLimitRefusal(error, lastFailure: lastFailure) {
                counts.filtered += 1
                return try write(line, status: "filtered", kind: "max_pixels", error: reason, row: row)
            }
            switch error {
            case .notCached where lastFailure != nil:
                let failure = lastFailure!
                counts.failed += 1
                let said = "failed when fetched (\(Timestamp.iso8601(failure.failedAt))): " + failure.reason
                try write(line, status: "failed", kind: failure.isRetried ? "failed_retryable" : "failed_url",
                          error: failure.isRetried ? said + "; the next prefetch tries it again" : said, row: row)
            case .notCached where otherVariants?.optedOut == true && !includesOptedOut:
                counts.optedOut += 1
                try write(line, status: "opted_out", kind: "noai",
                          error: "the server opted it out of AI training (X-Robots-Tag noai); --include-opted-out takes it", row: row)
            case .notCached where otherVariants != nil:
                counts.missing += 1
                try write(line, status: "missing", kind: "original_not_kept",
                          error: "only other variants of it are cached: prefetched with --no-original, it has no original to make this one "
                              + "from; export the variants prefetched, or prefetch it again with these options", row: row)
            case .notCached:
                counts.missing += 1
                try write(line, status: "missing", kind: "never_fetched",
                          error: "not in the cache, and no fetch of it failed: never fetched, or not reached by a prefetch that stopped early "
                              + "(--deadline, a signal): run prefetch", row: row)
            default:
                counts.failed += 1
                try write(line, status: "failed", kind: error.kind, error: error.message, row: row)
            }
        }
    }

    /// Why a row's image was refused by the pixel limit, if it was: when it was fetched (the download
    /// refused, remembered for the export), or now (the original over the limit its variant is made under).
    private static func pixelLimitRefusal(_ error: FetchError, lastFailure: FailedURLStore.Record?) -> String? {
        switch error {
        case .notCached: return lastFailure?.scope == .overPixelLimit ? lastFailure?.reason : nil
        case .tooManyPixels, .variantsNotMade(_, .tooManyPixels, _): return error.message
        case .variantsNotMade(_, .undecodable(let reason), _), .variantsNotMade(_, .failed(let reason), _):
            // The decoder's own refusal, in its words.
            return reason.contains(" is over the limit of ") ? reason : nil
        default: return nil
        }
    }

    /// A manifest line for a row not exported: its status, why, and its columns; counted for `--report`.
    private func write(_ line: JSONObject, status: String, kind: String, error: String, row: JSONObject?) throws(Failure) {
        var line = line
        line.add("status", status)
        line.add("reason", kind)
        line.add("error", error)
        counts.reasons[status, default: [:]][kind, default: 0] += 1
        rowsSinceShard.record(status: status, reason: kind)
        try write(line.with(row: row))
    }

    /// Ends the last shard, puts the shards and the manifest in
    /// place, and removes shards a previous export left beyond this one's.
    public func finish() throws(Failure) -> Counts {
        try closeShard()
        try flushManifest()
        // Rows after the last sample count with the last shard.
        if !shardStatistics.isEmpty { shardStatistics[shardStatistics.count - 1].absorb(rowsSinceShard) }
        if let upload {
            // Each shard's statistics, before the manifest.
            for (number, statistics) in shardStatistics.enumerated() {
                let name = ShardStatistics.fileName(number), partial = directory + "/." + ShardStatistics.fileName(number) + ".partial"
                do throws(SystemError) {
                    try OutputFile.write(bytes: Array(statistics.json(shard: number).utf8), to: partial)
                } catch {
                    throw Failure(reason: "cannot write \(partial): \(error.reason)")
                }
                do { try upload.publish(partial, as: name) } catch { throw Failure(reason: "\(upload.identity): \(error.reason)") }
            }
            // The manifest last, once every shard is in place in the store.
            do { try upload.finish(manifest: directory + "/.manifest.jsonl.partial", shardCount: counts.shards) } catch {
                throw Failure(reason: "\(upload.identity): \(error.reason)")
            }
            committed = true
            try? FileSystem.remove(directory + "/.manifest.jsonl.partial")
            return counts
        }
        do {
            // (The folder was marked when the export began.)
            for written in finished { try written.commit() }
            for (number, statistics) in shardStatistics.enumerated() {
                try TemporaryFile.replace(ShardStatistics.fileName(number), in: directory, with: statistics.json(shard: number))
            }
            try FileSystem.rename(directory + "/.manifest.jsonl.partial", to: manifestPath)
            committed = true
            for item in try DirectoryHandle(directory).list() where WebDatasetExport.isOwn(item.name) && !item.name.hasPrefix(".") {
                // Shards beyond this export's, and every shard of the other layout (an earlier export's).
                if item.name.hasSuffix(".tar"), let number = Int(item.name.dropLast(4)), number >= counts.shards || layout == .files {
                    try FileSystem.remove(directory + "/" + item.name)
                } else if item.name.hasSuffix("_stats.json"), let number = Int(item.name.prefix(5)), number >= counts.shards {
                    try FileSystem.remove(directory + "/" + item.name)
                } else if item.name.count == 5, let number = Int(item.name), number >= counts.shards || layout == .webdataset {
                    FolderShardWriter.removeFlat(directory + "/" + item.name)
                }
            }
        } catch {
            throw Failure(reason: "cannot finish \(directory): \(error)")
        }
        return counts
    }

    /// The shard the next sample goes to, started when needed.
    private func sampleShard() throws(Failure) -> String {
        if shard == nil {
            let name = shardName(counts.shards)
            do {
                shard = layout == .files ? try FolderShardWriter(path: directory + "/" + name) : try TarWriter(path: directory + "/" + name)
            } catch {
                throw Failure(reason: "cannot write \(name): \(error.reason)")
            }
            inShard = 0
        }
        return shardName(counts.shards)
    }

    private func closeShard() throws(Failure) {
        guard let current = shard else { return }
        shard = nil
        do { try current.finish() } catch { throw Failure(reason: "cannot write \(current.path): \(error.reason)") }
        if let upload {
            // Sent while the next shard is written; the one before it was sent and checked first.
            do { try upload.publish(current.partialPath, as: shardName(counts.shards)) } catch {
                throw Failure(reason: "\(upload.identity): \(error.reason)")
            }
        } else {
            finished.append(current)
        }
        shardStatistics.append(rowsSinceShard)
        rowsSinceShard = ShardStatistics()
        counts.shards += 1
    }

    private func write(_ line: JSONObject) throws(Failure) {
        pending += (line.serialized + "\n").utf8
        if pending.count >= 1 << 16 { try flushManifest() }
    }

    private func flushManifest() throws(Failure) {
        guard !pending.isEmpty else { return }
        do { try FileSystem.writeAll(manifest, pending, path: manifestPath) } catch {
            throw Failure(reason: error.description)
        }
        pending.removeAll(keepingCapacity: true)
    }

    /// A caption's text: a string as it is, anything else as its JSON.
    /// JSON `null` is no caption (no KEY.txt).
    private static func text(of value: JSONValue) -> String? {
        if case .string(let text) = value { return text }
        if case .null = value { return nil }
        return value.serialized
    }
}
