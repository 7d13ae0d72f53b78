#if canImport(Glibc)
import Glibc
#endif

/// The namespace's failed-URL list (SDWebImage's failedURLs), persistent across
/// processes: one small file per URL, `<namespace>/failed/<digest>`, written by
/// rename, so concurrent processes never see half a file and need no lock.
/// A file holds the URL's failures, one per kind of request (its
/// `RequestFingerprint`): a failure answers only requests like the one that
/// failed. The file's modification time is the latest failure's, so expiry
/// and counting need no read.
public struct FailedURLStore: Sendable {
    public let directory: String

    /// How long a failure is remembered unless told otherwise.
    public static let defaultTTL = AgeLimit.seconds(86_400)
    static let signature = "imgcache-failed 2"
    /// What earlier versions wrote: one failure, at the file's time.
    static let firstSignature = "imgcache-failed 1"
    /// Kinds of request remembered per URL; the oldest failure makes room.
    static let recordsPerURL = 8

    /// The run's listings: a lookup of a URL without a record then asks the disk nothing.
    let listings: ShardListings?

    public init(namespaceDirectory: String) {
        self.init(namespaceDirectory: namespaceDirectory, listings: nil)
    }

    init(namespaceDirectory: String, listings: ShardListings?) {
        self.listings = listings
        directory = namespaceDirectory + "/failed"
    }

    /// Which later requests a remembered failure answers.
    public struct Scope: Equatable, Sendable {
        /// Requests with this fingerprint (headers, credentials, cookies, proxy).
        public let request: RequestFingerprint
        /// Only requests whose size limit is this or smaller (the body was
        /// larger); nil: whatever their limit.
        public let sizeLimitUpTo: Int64?

        public init(request: RequestFingerprint, sizeLimitUpTo: Int64? = nil) {
            self.request = request
            self.sizeLimitUpTo = sizeLimitUpTo
        }

        /// The scope of a failure that is tried again: no request's fingerprint (not hex) is ever its.
        public static let retried = Scope(request: RequestFingerprint(digest: String(repeating: "r", count: 32)))
        /// Likewise for an image refused by the pixel limit: an export counts it as filtered.
        public static let overPixelLimit = Scope(request: RequestFingerprint(digest: String(repeating: "p", count: 32)))

        /// Whether a request with `fingerprint` and `sizeLimit` would fail the same way.
        public func covers(_ fingerprint: RequestFingerprint, sizeLimit: Int64?) -> Bool {
            guard fingerprint == request else { return false }
            guard let sizeLimitUpTo else { return true }
            return sizeLimit.map { $0 <= sizeLimitUpTo } ?? false
        }
    }

    /// One remembered failure.
    public struct Record: Equatable, Sendable {
        public let url: String
        public let reason: String
        /// Seconds since the epoch.
        public let failedAt: Double
        public let scope: Scope

        /// A failure the next fetch tries again (a timeout, a 5xx, a host given up; an image over the
        /// pixel limit, which a higher limit takes): kept only to say why a row has no image (export's
        /// manifest), never to refuse a request.
        public var isRetried: Bool { scope == Scope.retried || scope == Scope.overPixelLimit }
    }

    /// Remembers that `key`'s URL failed for `reason` at `now`, for the
    /// requests `scope` names; the URL's failures for other requests stay.
    public func record(_ key: CacheKey, url: String, reason: String, scope: Scope = Scope(request: .plain), now: Double) throws(SystemError) {
        try FileSystem.makeDirectories(directory, mode: 0o777)
        let path = directory + "/" + key.digest
        let earlier = (try? FileSystem.status(path))??.modified
        var kept = earlier.flatMap { FailedURLStore.read(path, failedAt: $0) } ?? []
        kept.removeAll { $0.scope == scope }
        kept.append(Record(url: RemoteURL.redacted(url), reason: reason, failedAt: now, scope: scope))
        kept = Array(kept.sorted { $0.failedAt < $1.failedAt }.suffix(FailedURLStore.recordsPerURL))
        var lines = [FailedURLStore.signature, "url " + EntryMetadata.escape(RemoteURL.redacted(url))]
        for record in kept {
            let limit = record.scope.sizeLimitUpTo.map(String.init) ?? "-"
            lines.append("failure \(record.failedAt) \(record.scope.request.digest) \(limit) " + EntryMetadata.escape(record.reason))
        }
        try TemporaryFile.replace(key.digest, in: directory, with: lines.joined(separator: "\n") + "\n",
                                  modified: kept.map(\.failedAt).max() ?? now)
        listings?.added(key.digest, in: ShardGenerations.failures)
    }

    /// The failures remembered for `key` that have not expired under `ttl`
    /// (empty when there is no file); nil when there is no file at all.
    public func lookup(_ key: CacheKey, ttl: AgeLimit, now: Double) -> [Record]? {
        let slot = ShardGenerations.failures
        let generation = listings?.generation(of: slot)
        if let generation, listings?.excludes(key, in: slot, at: generation) == true { return nil }
        let path = directory + "/" + key.digest
        guard let status = try? FileSystem.status(path), status.isRegularFile else {
            if let generation { listings?.record(slot, path: directory, generation: generation, folderMissing: false) }
            return nil
        }
        guard !ttl.isExpired(status.modified, now: now) else { return [] }
        return (FailedURLStore.read(path, failedAt: status.modified) ?? []).filter { !ttl.isExpired($0.failedAt, now: now) }
    }

    /// Every failure remembered (expired ones too: the caller tells them
    /// apart by `failedAt`), in no particular order; not those only tried again.
    public func records() throws(SystemError) -> [Record] {
        var found: [Record] = []
        try forEachRecord(removingAbandoned: false) { name, status in
            found += (FailedURLStore.read(directory + "/" + name, failedAt: status.modified) ?? []).filter { !$0.isRetried }
            return false
        }
        return found
    }

    /// Forgets the failures remembered for the URL `url` (as given, without
    /// its fragment; its credentials digested under `key`); whether there were any.
    public func forget(url: String, key: CredentialKey) -> Bool {
        let path = directory + "/" + CacheKey(key.keyed(URLText.withoutFragment(url)), fileExtension: nil).digest
        if case .success = SystemCall.unlink(path) { return true }
        return false
    }

    /// The failures in the file at `path`, whose modification time is
    /// `failedAt`; nil when it is not one this version understands.
    private static func read(_ path: String, failedAt: Double) -> [Record]? {
        guard let bytes = try? FileSystem.readFile(path, limit: 64 * 1024) else { return nil }
        return parse(bytes, failedAt: failedAt)
    }

    /// The failures in a record file's `bytes`; nil when they are not one this version understands.
    static func parse(_ bytes: [UInt8], failedAt: Double) -> [Record]? {
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n")
        var fields: [Substring: String] = [:]
        var records: [Record] = []
        func value(_ line: Substring) -> (Substring, Substring)? {
            guard let space = line.firstIndex(of: " ") else { return nil }
            return (line[..<space], line[line.index(after: space)...])
        }
        switch lines.first {
        case Substring(FailedURLStore.signature)?:
            for line in lines.dropFirst() {
                guard let (name, rest) = value(line) else { continue }
                if name == "failure" {
                    let parts = rest.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false)
                    guard parts.count == 4, let time = Double(parts[0]), time.isFinite, abs(time) < 1e12,
                          parts[1].utf8.count == 32 else { return nil }
                    let limit: Int64? = parts[2] == "-" ? nil : Int64(parts[2])
                    guard parts[2] == "-" || limit != nil else { return nil }
                    records.append(Record(url: "", reason: EntryMetadata.unescape(parts[3]), failedAt: time,
                                          scope: Scope(request: RequestFingerprint(digest: String(parts[1])), sizeLimitUpTo: limit)))
                } else {
                    fields[name] = EntryMetadata.unescape(rest)
                }
            }
        case Substring(FailedURLStore.firstSignature)?:
            // One failure of a request without the user's headers, credentials or cookies.
            for line in lines.dropFirst() {
                guard let (name, rest) = value(line) else { continue }
                fields[name] = EntryMetadata.unescape(rest)
            }
            let limit: Int64?
            switch fields["scope"]?.split(separator: " ") {
            case nil, ["plain-requests"]?: limit = nil
            case let parts? where parts.count == 2 && parts[0] == "size-limit-up-to" && Int64(parts[1]) != nil:
                limit = Int64(parts[1])!
            default: return nil  // not understood, so not obeyed
            }
            records.append(Record(url: "", reason: fields["reason"] ?? "", failedAt: failedAt,
                                  scope: Scope(request: .plain, sizeLimitUpTo: limit)))
        default:
            return nil  // written by a later version: not understood, so not obeyed
        }
        let url = fields["url"] ?? ""
        // No failure is later than the file: one whose time was set back (touch -d) is that old.
        return records.map { Record(url: url, reason: $0.reason, failedAt: min($0.failedAt, failedAt), scope: $0.scope) }
    }

    /// Forgets `key`'s failures (it succeeded), for every request.
    public func remove(_ key: CacheKey) {
        try? FileSystem.remove(directory + "/" + key.digest)
    }

    /// How many URLs have failures remembered, and how many of those expired
    /// under `ttl`: only records this version reads count (a damaged file is no failure).
    public func count(ttl: AgeLimit, now: Double) throws(SystemError) -> (remembered: Int, expired: Int) {
        var remembered = 0, expired = 0
        try forEachRecord(removingAbandoned: false) { name, status in
            // A URL only tried again is not on the list.
            guard FailedURLStore.read(directory + "/" + name, failedAt: status.modified)?.contains(where: { !$0.isRetried }) == true else {
                return false
            }
            remembered += 1
            if ttl.isExpired(status.modified, now: now) { expired += 1 }
            return false
        }
        return (remembered, expired)
    }

    /// Removes the URLs whose every failure expired under `ttl` (only counts
    /// them with `dryRun`), and abandoned temporary files. Returns how many URLs.
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
