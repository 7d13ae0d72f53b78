#if canImport(Glibc)
import Glibc
#endif

/// The namespace's failed-URL list (SDWebImage's failedURLs), persistent across
/// processes: one small file per URL, `<namespace>/failed/<digest>`, written by
/// rename, so concurrent processes never see half a record and need no lock.
/// The file's modification time is when the URL failed.
public struct FailedURLStore: Sendable {
    public let directory: String

    /// How long a failure is remembered unless told otherwise.
    public static let defaultTTL = AgeLimit.seconds(86_400)
    static let signature = "imgcache-failed 1"

    public init(namespaceDirectory: String) {
        directory = namespaceDirectory + "/failed"
    }

    /// Which later requests a remembered failure answers.
    public enum Scope: Equatable, Sendable {
        /// Every request for the URL.
        case everyRequest
        /// Requests without credentials, headers or cookies of the user's: the
        /// server refused such a request (401, 403, 407), and another may pass.
        case plainRequests
        /// Requests whose size limit is this or smaller: the body was larger.
        case sizeLimitUpTo(Int64)

        /// Whether a request of this kind would fail the same way.
        public func covers(plainRequest: Bool, sizeLimit: Int64?) -> Bool {
            switch self {
            case .everyRequest: return true
            case .plainRequests: return plainRequest
            case .sizeLimitUpTo(let limit): return sizeLimit.map { $0 <= limit } ?? false
            }
        }
    }

    /// One remembered failure.
    public struct Record: Equatable, Sendable {
        public let url: String
        public let reason: String
        /// Seconds since the epoch.
        public let failedAt: Double
        public let scope: Scope
    }

    /// Remembers that `key`'s URL failed for `reason` at `now`, for the requests `scope` names.
    public func record(_ key: CacheKey, url: String, reason: String, scope: Scope = .everyRequest, now: Double) throws(SystemError) {
        try FileSystem.makeDirectories(directory)
        var lines = [FailedURLStore.signature, "url " + EntryMetadata.escape(RemoteURL.redacted(url)),
                     "reason " + EntryMetadata.escape(reason)]
        switch scope {
        case .everyRequest: break
        case .plainRequests: lines.append("scope plain-requests")
        case .sizeLimitUpTo(let limit): lines.append("scope size-limit-up-to \(limit)")
        }
        try TemporaryFile.replace(key.digest, in: directory, with: lines.joined(separator: "\n") + "\n", modified: now)
    }

    /// The failure remembered for `key`, unless it expired under `ttl`.
    public func lookup(_ key: CacheKey, ttl: AgeLimit, now: Double) -> Record? {
        let path = directory + "/" + key.digest
        guard let status = try? FileSystem.status(path), status.isRegularFile,
              !ttl.isExpired(status.modified, now: now) else { return nil }
        return FailedURLStore.read(path, failedAt: status.modified)
    }

    /// Every failure remembered (expired ones too: the caller tells them
    /// apart by `failedAt`), in no particular order.
    public func records() throws(SystemError) -> [Record] {
        var found: [Record] = []
        try forEachRecord(removingAbandoned: false) { name, status in
            if let record = FailedURLStore.read(directory + "/" + name, failedAt: status.modified) { found.append(record) }
            return false
        }
        return found
    }

    /// Forgets the failure remembered for the URL `url` (as given, without
    /// its fragment); whether there was one.
    public func forget(url: String) -> Bool {
        let path = directory + "/" + Lookup.failureKey(URLText.withoutFragment(url)).digest
        return SystemCall.unlink(path) == 0
    }

    /// The record in the file at `path`; nil when it is not one this version understands.
    private static func read(_ path: String, failedAt: Double) -> Record? {
        guard let bytes = try? FileSystem.readFile(path, limit: 64 * 1024) else { return nil }
        var fields: [Substring: String] = [:]
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n")
        guard lines.first == Substring(FailedURLStore.signature) else { return nil }
        for line in lines.dropFirst() {
            guard let space = line.firstIndex(of: " ") else { continue }
            fields[line[..<space]] = EntryMetadata.unescape(line[line.index(after: space)...])
        }
        let scope: Scope
        switch fields["scope"]?.split(separator: " ") {
        case nil: scope = .everyRequest
        case ["plain-requests"]?: scope = .plainRequests
        case let parts? where parts.count == 2 && parts[0] == "size-limit-up-to" && Int64(parts[1]) != nil:
            scope = .sizeLimitUpTo(Int64(parts[1])!)
        default: return nil  // written by a later version: not understood, so not obeyed
        }
        return Record(url: fields["url"] ?? "", reason: fields["reason"] ?? "", failedAt: failedAt, scope: scope)
    }

    /// Forgets `key`'s failure (it succeeded).
    public func remove(_ key: CacheKey) {
        try? FileSystem.remove(directory + "/" + key.digest)
    }

    /// How many failures are remembered, and how many of those expired under `ttl`.
    public func count(ttl: AgeLimit, now: Double) throws(SystemError) -> (remembered: Int, expired: Int) {
        var remembered = 0, expired = 0
        try forEachRecord(removingAbandoned: false) { _, status in
            remembered += 1
            if ttl.isExpired(status.modified, now: now) { expired += 1 }
            return false
        }
        return (remembered, expired)
    }

    /// Removes the failures that expired under `ttl` (only counts them with
    /// `dryRun`), and abandoned temporary files. Returns how many failures.
    public func prune(ttl: AgeLimit, now: Double, dryRun: Bool) throws(SystemError) -> Int {
        var removed = 0
        try forEachRecord(removingAbandoned: !dryRun) { _, status in
            guard ttl.isExpired(status.modified, now: now) else { return false }
            removed += 1
            return !dryRun
        }
        return removed
    }

    /// Forgets every failure. Returns how many there were.
    public func clear() throws(SystemError) -> Int {
        var removed = 0
        try forEachRecord(removingAbandoned: true) { _, _ in
            removed += 1
            return true
        }
        return removed
    }

    /// Calls `body` for each record file; removes it when `body` returns true.
    /// With `removingAbandoned`, abandoned temporary files are removed on the way.
    private func forEachRecord(removingAbandoned: Bool, _ body: (String, FileStatus) -> Bool) throws(SystemError) {
        let folder: DirectoryHandle
        do { folder = try DirectoryHandle(directory) } catch {
            if error.errno == .noSuchFile { return }
            throw error
        }
        let now = WallClock.now()
        for item in try folder.list() {
            guard let status = try folder.status(item.name) else { continue }
            if TemporaryFile.isTemporary(item.name) {
                if removingAbandoned, TemporaryFile.isAbandoned(item.name, modified: status.modified, now: now) {
                    try folder.remove(item.name)
                }
                continue
            }
            guard status.isRegularFile, item.name.utf8.count == 32 else { continue }
            if body(item.name, status) { try folder.remove(item.name) }
        }
    }
}
