#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The URL of each entry of a shard, kept in the file `<shard>/urls`: an
/// entry's extended attribute holds only what fits in its inode, and a URL
/// rarely does. One line per store, `<md5> <url>` (and, for a transform,
/// ` imgcache-<transformer key>`), appended while the store holds the shard's
/// lock; the last line of a digest wins. `clean` drops the lines of entries
/// it removed, under the shard's exclusive lock, so no append is lost; `clear`
/// empties the file in place (a process storing meanwhile keeps appending to
/// the same file). Lookups never read it.
final class URLLog: Sendable {
    /// The file's name inside a shard folder.
    static let fileName = "urls"

    let directory: String
    /// This process's open descriptors of the shards' logs (-1: not open), and the shards whose
    /// logs are open, least recently used first: at most `openLimit` at once, so that a run over
    /// every shard keeps room under a modest `ulimit -n`.
    private struct OpenLogs {
        var descriptors = [Int32](repeating: -1, count: 256)
        var recent: [Int] = []
    }
    private let logs = Mutex(OpenLogs())
    /// 16, or fewer under a low `ulimit -n`: a quarter of what the limit leaves beyond the two
    /// dozen descriptors a run needs besides (transfers, workers, locks), and at least one.
    static let openLimit: Int = {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < rlim_t(Int.max) else { return 16 }
        return max(1, min(16, (Int(clamping: limit.rlim_cur) - 24) / 4))
    }()

    init(namespaceDirectory: String) {
        directory = namespaceDirectory
    }

    deinit {
        logs.withLock { for descriptor in $0.descriptors where descriptor >= 0 { SystemCall.close(descriptor) } }
    }

    /// Shard `index`'s folder name: two lowercase hex digits.
    static func shardName(_ index: Int) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: [digits[(index >> 4) & 15], digits[index & 15]], as: UTF8.self)
    }

    /// The log's line for an entry stored under `key` from `url` (already redacted).
    static func line(digest: String, key: String, url: String) -> String {
        var line = digest + " " + url
        // A transformed entry's key is the URL's key, a line break, and the transformer key.
        if let newline = key.firstIndex(of: "\n") { line += " " + key[key.index(after: newline)...] }
        return line + "\n"
    }

    /// Appends `line` to shard `shard`'s log. Best effort: an entry whose URL
    /// could not be logged is still whole, only listed without its URL.
    func append(_ line: String, shard: Int) {
        logs.withLock { open in
            if open.descriptors[shard] < 0 {
                // The least recently used log is closed first when as many as allowed are open.
                if open.recent.count >= URLLog.openLimit {
                    let oldest = open.recent.removeFirst()
                    SystemCall.close(open.descriptors[oldest])
                    open.descriptors[oldest] = -1
                }
                let path = directory + "/" + URLLog.shardName(shard) + "/" + URLLog.fileName
                open.descriptors[shard] = (try? FileSystem.openForAppending(path, creating: true).get()) ?? -1
                guard open.descriptors[shard] >= 0 else { return }
                open.recent.append(shard)
            } else if open.recent.last != shard, let at = open.recent.firstIndex(of: shard) {
                open.recent.remove(at: at)
                open.recent.append(shard)
            }
            try? FileSystem.writeAll(open.descriptors[shard], Array(line.utf8), path: URLLog.fileName)
        }
    }

    /// The URLs in the log at `shardPath`, by digest (the last line of each wins).
    static func read(shardPath: String) -> [String: String] {
        guard isUsable(shardPath + "/" + fileName),
              let bytes = try? FileSystem.readFile(shardPath + "/" + fileName, limit: maximumLength) else { return [:] }
        return parse(bytes)
    }

    /// The longest log read: far more than a shard's entries ever write (a line is a URL).
    static let maximumLength = 256 << 20

    /// Whether the log at `path` is one to read: a regular file no longer than `maximumLength`.
    /// Anything else (a link, a FIFO, a sparse file of gigabytes) was planted, not written by
    /// imgcache: read as no log, at the cost of a `stat`, not of its size.
    private static func isUsable(_ path: String) -> Bool {
        guard case .success(let status) = SystemCall.lstat(path) else { return false }
        return status.st_mode & S_IFMT == S_IFREG && status.st_size <= off_t(maximumLength)
    }

    /// The URLs in a log's `bytes`, by digest.
    static func parse(_ bytes: [UInt8]) -> [String: String] {
        var urls: [String: String] = [:]
        for line in bytes.split(separator: 0x0A) where line.count > 33 && line[line.startIndex + 32] == 0x20 {
            urls[String(decoding: line.prefix(32), as: UTF8.self)] = String(decoding: line.dropFirst(33), as: UTF8.self)
        }
        return urls
    }

    /// The URL (and transformer key, for a transform) `digest`'s last line gives, if any.
    static func entry(_ digest: String, shardPath: String) -> (url: String, key: String)? {
        read(shardPath: shardPath)[digest].map(split)
    }

    /// A line's text after its digest as the URL and the entry's key.
    static func split(_ rest: String) -> (url: String, key: String) {
        guard let space = rest.firstIndex(of: " ") else { return (rest, rest) }
        let url = String(rest[..<space])
        return (url, url + "\n" + rest[rest.index(after: space)...])
    }

    /// Rewrites the log at `shardPath` in place with the last line of each
    /// of the `keeping` digests only (earlier lines of a digest are stale:
    /// each store of a key appends one). The caller holds the shard's
    /// exclusive lock, so no store appends meanwhile; in place, so that the
    /// descriptors other processes keep open stay the log's.
    static func compact(shardPath: String, keeping: Set<String>) throws(SystemError) {
        try rewrite(shardPath: shardPath) { keeping.contains($0) }
    }

    /// Rewrites the log at `shardPath` without the lines of `digests` (their
    /// entries were removed), each other digest's last line kept.
    static func dropLines(of digests: Set<String>, shardPath: String) throws(SystemError) {
        try rewrite(shardPath: shardPath) { !digests.contains($0) }
    }

    /// Keeps the last line of each digest `keeps` accepts.
    private static func rewrite(shardPath: String, keeps: (String) -> Bool) throws(SystemError) {
        let path = shardPath + "/" + fileName
        guard case .success = SystemCall.lstat(path) else { return }
        if !isUsable(path) {
            // No log imgcache wrote (a planted link, a FIFO, gigabytes): removed (the link, not what it
            // leads to), so that maintenance goes on; the entries stay, only their URLs are not listed.
            try FileSystem.remove(path)
            return
        }
        guard let bytes = try FileSystem.readFile(path, limit: maximumLength) else { return }
        let lines = bytes.split(separator: 0x0A).filter { $0.count > 32 }
        var last: [String: Int] = [:]
        for (index, line) in lines.enumerated() { last[String(decoding: line.prefix(32), as: UTF8.self)] = index }
        var kept: [UInt8] = []
        for (index, line) in lines.enumerated() {
            let digest = String(decoding: line.prefix(32), as: UTF8.self)
            guard last[digest] == index, keeps(digest) else { continue }
            kept += line
            kept.append(0x0A)
        }
        guard kept.count < bytes.count else { return }
        let descriptor = try FileSystem.openRegular(path, O_WRONLY).get("open", path: path)
        defer { SystemCall.close(descriptor) }
        try FileSystem.writeAll(descriptor, kept, path: path)
        try SystemCall.ftruncate(descriptor, off_t(kept.count)).get("truncate", path: path)
    }
}
