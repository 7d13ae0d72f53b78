#if canImport(Glibc)
import Glibc
#endif

/// What fetch and prefetch did in a namespace (ccache's `-s`): counted in
/// memory while a process runs, added to the namespace's statistics once
/// when it ends, summed over processes since the counts were last zeroed.
public struct UsageStatistics: Equatable, Sendable {
    /// Answered from the namespace, a `--read-only-path` folder, or earlier in the same run.
    public var hits = 0
    /// Taken from a remote store.
    public var remoteHits = 0
    /// Downloaded (or revalidated) and stored.
    public var downloads = 0
    /// The size of what downloads stored.
    public var downloadedBytes: Int64 = 0
    /// URLs that failed, blacklisted ones included.
    public var failures = 0

    public init() {}

    /// Every answer that was not a local hit.
    public var misses: Int { UsageStatistics.saturating(UsageStatistics.saturating(remoteHits, downloads), failures) }

    public var isEmpty: Bool { self == UsageStatistics() }

    /// Counts one answer; an interrupted one is no answer.
    public mutating func count(_ answer: Result<FetchResult, FetchError>) {
        switch answer {
        case .success(let fetched):
            switch fetched.cacheType {
            case .disk, .memory, .stale: hits += 1
            case .remote: remoteHits += 1
            case .downloaded, .refreshed:
                downloads += 1
                downloadedBytes += fetched.downloadedByteCount ?? 0
            }
        case .failure(.interrupted): break
        case .failure: failures += 1
        }
    }

    /// The sum of two counts, saturating: a statistics file whose numbers
    /// overflow (damaged, or summed for ages) gives the largest count, never a trap.
    static func + (a: UsageStatistics, b: UsageStatistics) -> UsageStatistics {
        let add = { (x: Int, y: Int) in saturating(x, y) }
        var sum = a
        sum.hits = add(a.hits, b.hits)
        sum.remoteHits = add(a.remoteHits, b.remoteHits)
        sum.downloads = add(a.downloads, b.downloads)
        sum.downloadedBytes = saturating(a.downloadedBytes, b.downloadedBytes)
        sum.failures = add(a.failures, b.failures)
        return sum
    }

    /// `x + y`, or the largest value when that overflows (counts are never negative).
    static func saturating<T: FixedWidthInteger>(_ x: T, _ y: T) -> T {
        let (sum, overflow) = x.addingReportingOverflow(y)
        return overflow ? .max : sum
    }

    /// One line of the statistics file.
    var line: String {
        "run hits=\(hits) remote=\(remoteHits) downloads=\(downloads) bytes=\(downloadedBytes) failures=\(failures)\n"
    }

    /// A `run` line's counts; nil for another line (one a later version wrote is skipped).
    init?(line: Substring) {
        let words = line.split(separator: " ")
        guard words.first == "run" else { return nil }
        for word in words.dropFirst() {
            let pair = word.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, let value = Int64(pair[1]), value >= 0 else { continue }
            switch pair[0] {
            case "hits": hits = Int(value)
            case "remote": remoteHits = Int(value)
            case "downloads": downloads = Int(value)
            case "bytes": downloadedBytes = value
            case "failures": failures = Int(value)
            default: continue
            }
        }
    }
}

/// A namespace's statistics file, `<namespace>/stats`: a `run` line appended
/// by each process that fetched, under a shared lock (one open, one write of
/// a line, one close); `zeroed <time>` lines mark where counting restarts.
/// Zeroing and compacting take the lock exclusively, so no process's line is
/// lost between reading the file and replacing it.
public struct StatisticsLog: Sendable {
    public static let fileName = "stats"
    public let path: String
    let lock: NamespaceLock

    public init(namespaceDirectory: String) {
        path = namespaceDirectory + "/" + StatisticsLog.fileName
        lock = NamespaceLock(namespaceDirectory: namespaceDirectory)
    }

    /// Adds a process's counts. Best effort: statistics never fail a fetch,
    /// and a namespace that was never made gets none.
    public func append(_ statistics: UsageStatistics, using handle: NamespaceLock.Handle? = nil) {
        guard !statistics.isEmpty else { return }
        lock.withShard(NamespaceLock.statisticsByte, .shared, using: handle) {
            var opened = FileSystem.openForAppending(path, creating: false)
            // Made only in a namespace (its lock file there): never in a folder imgcache refused to adopt.
            if case .failure(.noSuchFile) = opened, (try? FileSystem.status(lock.path))??.isRegularFile == true {
                opened = FileSystem.openForAppending(path, creating: true)
            }
            guard case .success(let descriptor) = opened else { return }
            // One write of one short line: appends of concurrent processes never interleave.
            try? FileSystem.writeAll(descriptor, Array(statistics.line.utf8), path: path)
            SystemCall.close(descriptor)
        }
    }

    /// The counts since they were last zeroed, and when that was (nil: never).
    public func read() -> (statistics: UsageStatistics, since: Double?) {
        guard let bytes = try? FileSystem.readFile(path, limit: 64 << 20) else { return (UsageStatistics(), nil) }
        return StatisticsLog.parse(bytes)
    }

    /// The counts in a statistics file's `bytes` since they were last zeroed, and when that was.
    static func parse(_ bytes: [UInt8]) -> (statistics: UsageStatistics, since: Double?) {
        var sum = UsageStatistics(), since: Double?
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            if line.hasPrefix("zeroed "), let time = Double(line.dropFirst(7)), time.isFinite, abs(time) < 1e12 {
                sum = UsageStatistics()
                since = time
            } else if let counts = UsageStatistics(line: line) {
                sum = sum + counts
            }
        }
        return (sum, since)
    }

    /// Starts counting again from `now`.
    public func zero(now: Double) throws(SystemError) {
        try rewrite("zeroed \(now)\n")
    }

    /// Replaces the lines by their sum (clean does it), so the file stays a few lines long.
    public func compact() throws(SystemError) {
        guard let status = try FileSystem.status(path), status.size > 4096 else { return }
        try lock.withShard(NamespaceLock.statisticsByte, .exclusive) { () throws(SystemError) in
            let (statistics, since) = read()
            try replace((since.map { "zeroed \($0)\n" } ?? "") + (statistics.isEmpty ? "" : statistics.line))
        }
    }

    private func rewrite(_ text: String) throws(SystemError) {
        try lock.withShard(NamespaceLock.statisticsByte, .exclusive) { () throws(SystemError) in try replace(text) }
    }

    /// Writes `text` as the whole file (temporary file and rename); the caller holds the lock.
    private func replace(_ text: String) throws(SystemError) {
        try TemporaryFile.replace(StatisticsLog.fileName, in: FileSystem.parentDirectory(of: path), with: text)
    }
}
