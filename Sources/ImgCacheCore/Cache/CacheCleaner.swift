/// `clean` (SDImageCache's deleteOldFiles): drops entries not used for the
/// maximum age, then, if the namespace is still over its maximum size, the
/// least recently used until it is under half of it. Also removes abandoned
/// temporary files, leftovers of interrupted stores, symbolic links planted in
/// the cache (the links, never their targets) and expired failed URLs.
///
/// Only one clean runs per namespace: a second one finds the claim taken and
/// returns at once. Planning reads a scan without locks; each shard's victims
/// are then removed holding that shard's lock, each one only if it is still
/// the file the scan saw, unchanged (a hit since the scan saves it).
public struct CacheCleaner: Sendable {
    public let cache: DiskCache

    public init(cache: DiskCache) {
        self.cache = cache
    }

    /// Count and sizes of a group of files.
    public struct Tally: Equatable, Sendable {
        public var count = 0
        public var bytes: Int64 = 0
        /// Bytes on disk (blocks), which `--max-size` bounds.
        public var allocatedBytes: Int64 = 0

        public init() {}

        mutating func add(_ file: NamespaceScan.ScannedFile) {
            count += 1
            bytes += file.size
            allocatedBytes += file.allocatedSize
        }

        mutating func subtract(_ file: NamespaceScan.ScannedFile) {
            count -= 1
            bytes -= file.size
            allocatedBytes -= file.allocatedSize
        }
    }

    /// What a clean removed (or, with `dryRun`, would remove).
    public struct Report: Equatable, Sendable {
        public var dryRun = false
        public var limits: CacheLimits
        /// Entries not used for `limits.maxAge`.
        public var expired = Tally()
        /// Least recently used entries dropped to get under half of `limits.maxSize`.
        public var evicted = Tally()
        public var temporaries = Tally()
        /// Orphaned sidecars, images without metadata, and symbolic links.
        public var leftovers = 0
        public var failedURLs = 0
        /// Entries used since the scan, and so kept.
        public var spared = 0
        /// What the namespace holds afterwards.
        public var remaining = Tally()
        /// Shard folders that could not be read, and so were not cleaned.
        public var unreadableShards: [SystemError] = []
        /// With a dry run, every file the clean would remove and why, in the
        /// order it would remove them (empty otherwise).
        public var planned: [PlannedRemoval] = []
        /// The clean was told to stop (a signal): it stopped between shards.
        public var interrupted = false
    }

    /// One file a clean would remove, and why (`clean --dry-run`).
    public struct PlannedRemoval: Equatable, Sendable {
        public enum Reason: String, Sendable {
            /// Not used for the maximum age.
            case expired
            /// Among the least recently used, over the maximum size.
            case evicted
            /// A temporary file its writer abandoned.
            case abandoned
            /// An orphaned sidecar, an image without metadata, or a symbolic link.
            case leftover
        }
        public let path: String
        /// The URL it was stored from, when the shard's log has it.
        public let url: String?
        /// What the entry is beside the image as served (a thumbnail, another
        /// Accept), when the shard's log says; nil for the image as served.
        public let variant: KeyVariant?
        public let reason: Reason
        public let bytes: Int64
        /// For an entry: its last use.
        public let lastUse: Double
    }

    /// Whether the clean ran.
    public enum Outcome: Equatable, Sendable {
        case cleaned(Report)
        /// Another clean of this namespace is running; nothing was done.
        case alreadyRunning
    }

    /// Cleans the namespace under `limits` (failed URLs under `limits.failedTTL`),
    /// at `now`. `shouldStop` is asked between shards: a clean told to stop
    /// removes no more and reports what it did.
    public func clean(limits: CacheLimits, now: Double, dryRun: Bool = false,
                      shouldStop: @escaping () -> Bool = { false }) throws(SystemError) -> Outcome {
        guard (try? FileSystem.status(cache.directory)) != nil else {
            return .cleaned(Report(dryRun: dryRun, limits: limits))  // nothing was ever stored
        }
        // Another program's folder is never cleaned, nor given a lock file.
        guard NamespaceMarker.mayAdopt(cache.directory) else { throw NamespaceMarker.notANamespace(cache.directory) }
        // A dry run changes nothing, so it neither needs nor takes the claim.
        let claim = dryRun ? nil : try cache.lock.tryClaimCleaner()
        if !dryRun && claim == nil { return .alreadyRunning }
        defer { withExtendedLifetime(claim) {} }

        let scan = try NamespaceScan.scan(cache.directory)
        var report = Report(dryRun: dryRun, limits: limits)
        report.unreadableShards = scan.unreadableShards

        // Age first, then size: least recently used first, ties by path so the
        // choice is the same on every run.
        var expired: [NamespaceScan.ScannedFile] = [], evicted: [NamespaceScan.ScannedFile] = []
        var kept: [NamespaceScan.ScannedFile] = []
        for entry in scan.entries {
            if limits.maxAge.isExpired(entry.modified, now: now) {
                expired.append(entry)
                report.expired.add(entry)
            } else {
                kept.append(entry)
            }
        }
        var total = kept.reduce(Int64(0)) { $0 + $1.allocatedSize }
        if case .bytes(let maxSize) = limits.maxSize, total > maxSize {
            kept.sort { ($0.modified, $0.relativePath) < ($1.modified, $1.relativePath) }
            var dropped = 0
            while dropped < kept.count, total > maxSize / 2 {
                let entry = kept[dropped]
                evicted.append(entry)
                report.evicted.add(entry)
                total -= entry.allocatedSize
                dropped += 1
            }
            kept.removeFirst(dropped)
        }
        for entry in kept { report.remaining.add(entry) }

        let abandoned = scan.temporaries.filter { TemporaryFile.isAbandoned($0.name, modified: $0.modified, now: now) }
        for file in abandoned { report.temporaries.add(file) }
        let leftovers = scan.orphanSidecars + scan.incompleteImages
        report.leftovers = leftovers.count + scan.links.count
        report.failedURLs = try FailedURLStore(namespaceDirectory: cache.directory).prune(ttl: limits.failedTTL, now: now, dryRun: dryRun)
        guard !dryRun else {
            report.planned = plan([(expired, .expired), (evicted, .evicted), (abandoned, .abandoned), (leftovers + scan.links, .leftover)])
            return .cleaned(report)
        }

        let removal = ShardRemoval(cache: cache, shouldStop: shouldStop)
        // The report says what was removed: entries used since the scan (kept)
        // or removed meanwhile by another process (gone) are taken back out.
        for (victims, keyPath) in [(expired, \Report.expired), (evicted, \Report.evicted)] {
            let notRemoved = try removal.removeEntries(victims)
            for entry in notRemoved.used + notRemoved.gone { report[keyPath: keyPath].subtract(entry) }
            for entry in notRemoved.used { report.remaining.add(entry) }
            if !shouldStop() { report.spared += notRemoved.used.count }
        }
        report.leftovers = try removal.removeLeftovers(leftovers) + removal.removeUnlocked(scan.links)
        _ = try removal.removeUnlocked(abandoned)
        // A URL log far longer than its entries need holds stale lines (a key stored
        // again appends one each time): kept to the last line of each entry.
        let entriesPerShard = Dictionary(grouping: scan.images, by: \.shard).mapValues(\.count)
        for (shard, size) in scan.logSizes where size > Int64(entriesPerShard[shard, default: 0] + 1) * 400 + 4096 {
            try removal.compactLog(shard)
        }
        report.interrupted = shouldStop()
        return .cleaned(report)
    }
}

extension CacheCleaner {
    /// The files of `groups` as a dry run lists them, with the URLs their shards' logs give.
    private func plan(_ groups: [([NamespaceScan.ScannedFile], PlannedRemoval.Reason)]) -> [PlannedRemoval] {
        var logs: [String: [String: String]] = [:]
        var planned: [PlannedRemoval] = []
        for (files, reason) in groups {
            for file in files {
                let shardPath = cache.directory + "/" + file.shard
                if file.shard.isEmpty == false, logs[file.shard] == nil { logs[file.shard] = URLLog.read(shardPath: shardPath) }
                let logged = reason == .expired || reason == .evicted
                    ? logs[file.shard]?[EntryNames.digest(of: file.name)].map(URLLog.split) : nil
                planned.append(PlannedRemoval(path: cache.directory + "/" + file.relativePath, url: logged?.url,
                                              variant: logged.flatMap { KeyVariant(key: $0.key) }, reason: reason,
                                              bytes: file.size, lastUse: file.modified))
            }
        }
        return planned
    }
}

/// Removes scanned files from a namespace, shard by shard under the shard's
/// exclusive lock, each only if it is still the very file that was scanned.
struct ShardRemoval {
    let cache: DiskCache
    /// Asked before each shard: once true, no more is removed.
    var shouldStop: () -> Bool = { false }

    /// Removes `entries` (with their sidecars). Returns those not removed: used
    /// (changed since the scan, so kept) and gone (removed by someone else).
    func removeEntries(_ entries: [NamespaceScan.ScannedFile]) throws(SystemError)
        -> (used: [NamespaceScan.ScannedFile], gone: [NamespaceScan.ScannedFile]) {
        var spared: [NamespaceScan.ScannedFile] = [], gone: [NamespaceScan.ScannedFile] = []
        for (shard, files) in Dictionary(grouping: entries, by: \.shard).sorted(by: { $0.key < $1.key }) {
            // Stopped: what was not reached stays, as if used meanwhile (the report says so).
            if shouldStop() {
                spared += files
                continue
            }
            guard let folder = try open(shard) else {
                gone += files
                continue
            }
            try cache.lock.withShard(Int(shard, radix: 16) ?? 0, .exclusive) { () throws(SystemError) in
                var removed = false
                for file in files {
                    // Renamed away first, then checked: a hit (which takes no lock) touches its file
                    // by name, so a touch either came before the rename and shows here, or finds the
                    // name gone and is a miss. Checking first and removing after would let a hit
                    // touch and serve an entry between the check and the removal.
                    let aside = TemporaryFile.prefix + "evicted-" + file.name + "." + TemporaryFile.owner + ".0"
                    guard try folder.rename(file.name, to: aside), let now = try folder.status(aside) else {
                        gone.append(file)
                        continue
                    }
                    guard now.inode == file.inode, now.modified == file.modified, now.isRegularFile else {
                        // Used (or stored anew) since the scan: put back, where no store can have
                        // landed meanwhile (stores hold this shard's byte shared).
                        try folder.rename(aside, to: file.name)
                        cache.listings.restored(Int(shard, radix: 16) ?? 0)
                        spared.append(file)
                        continue
                    }
                    try folder.remove(aside)
                    removed = true
                    if file.hasSidecar { try folder.remove(EntryNames.digest(of: file.name) + ".meta") }
                }
                // The URLs of the entries that went go from the shard's log, still under the lock.
                if removed {
                    let remaining = try folder.list().filter { EntryNames.kind(of: $0.name) == .image }.map { EntryNames.digest(of: $0.name) }
                    try URLLog.compact(shardPath: cache.directory + "/" + shard, keeping: Set(remaining))
                }
            }
        }
        return (spared, gone)
    }

    /// Rewrites `shard`'s URL log with the last line of each entry there, under the shard's lock.
    func compactLog(_ shard: String) throws(SystemError) {
        guard let folder = try open(shard) else { return }
        try cache.lock.withShard(Int(shard, radix: 16) ?? 0, .exclusive) { () throws(SystemError) in
            let remaining = try folder.list().filter { EntryNames.kind(of: $0.name) == .image }.map { EntryNames.digest(of: $0.name) }
            try URLLog.compact(shardPath: cache.directory + "/" + shard, keeping: Set(remaining))
        }
    }

    /// Removes orphaned sidecars and images without metadata, rechecking under
    /// the lock that a store has not since completed them. Returns how many went.
    func removeLeftovers(_ files: [NamespaceScan.ScannedFile]) throws(SystemError) -> Int {
        var removed = 0
        for (shard, group) in Dictionary(grouping: files, by: \.shard) {
            guard let folder = try open(shard) else { continue }
            try cache.lock.withShard(Int(shard, radix: 16) ?? 0, .exclusive) { () throws(SystemError) in
                let present = Set(try folder.list().map(\.name))
                for file in group {
                    let digest = EntryNames.digest(of: file.name)
                    if EntryNames.isSidecar(file.name) {
                        // Still orphaned if no image of this digest exists now.
                        guard !present.contains(where: { $0 != file.name && $0.hasPrefix(digest) && EntryNames.kind(of: $0) == .image }) else { continue }
                    } else {
                        guard !present.contains(digest + ".meta") else { continue }
                    }
                    if try folder.remove(file.name) { removed += 1 }
                }
            }
        }
        return removed
    }

    /// Removes files no lookup or store relies on (abandoned temporaries, links).
    /// Returns how many went.
    func removeUnlocked(_ files: [NamespaceScan.ScannedFile]) throws(SystemError) -> Int {
        guard !files.isEmpty else { return 0 }
        let namespace = try DirectoryHandle(cache.directory)
        var removed = 0
        for (shard, group) in Dictionary(grouping: files, by: \.shard) {
            let folder = shard.isEmpty ? namespace : (try open(shard) ?? namespace)
            for file in group where shard.isEmpty || folder !== namespace {
                if try folder.remove(file.name) { removed += 1 }
            }
        }
        return removed
    }

    private func open(_ shard: String) throws(SystemError) -> DirectoryHandle? {
        do { return try DirectoryHandle(cache.directory).child(shard) } catch {
            if error.errno == .noSuchFile || error.errno == .tooManySymbolicLinks || error.errno == .notDirectory { return nil }
            throw error
        }
    }
}
