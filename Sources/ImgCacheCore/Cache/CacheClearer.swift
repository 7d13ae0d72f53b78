/// `clear` (SDImageCache's clearDisk): removes every entry of a namespace, shard
/// by shard under each shard's exclusive lock, so a concurrent reader sees an
/// entry whole or not at all and waits at most for one shard. Temporary files
/// of stores still running are left to them; symbolic links are removed, never
/// followed. The namespace's settings and failed-URL list stay (`clear --failed`
/// empties the list).
public struct CacheClearer: Sendable {
    public let cache: DiskCache

    public init(cache: DiskCache) {
        self.cache = cache
    }

    /// What a clear removed.
    public struct Report: Equatable, Sendable {
        public var entries = CacheCleaner.Tally()
        public var temporaries = 0
        /// Sidecars, images without metadata, links and the like.
        public var leftovers = 0
        /// Shards that could not be read or emptied (left as they are; the others are cleared).
        public var unreadableShards: [SystemError] = []
        /// Whether one of them could be read but not emptied: the cache cannot be written.
        public var unwritable = false
    }

    public func clear(now: Double) throws(SystemError) -> Report {
        var report = Report()
        let namespace: DirectoryHandle
        do { namespace = try DirectoryHandle(cache.directory) } catch {
            if error.errno == .noSuchFile { return report }
            throw error
        }
        // Another program's folder is never emptied, nor given a lock file.
        guard NamespaceMarker.mayAdopt(cache.directory) else { throw NamespaceMarker.notANamespace(cache.directory) }
        // So that readers and writers wait for each shard: without it (a FIFO in its place, a cache
        // this user cannot write) nothing is cleared, and that is said once, not once per shard.
        try cache.lock.create()
        let attributes = FileSystem.supportsAttributes(cache.directory)
        for item in try namespace.list() where EntryNames.isShard(item.name) {
            // One shard that cannot be read or emptied stops only itself.
            do throws(SystemError) {
                try clear(shard: item.name, in: namespace, attributes: attributes, now: now, into: &report)
            } catch {
                report.unreadableShards.append(error)
                if DirectoryHandle.isWriteFailure(error) { report.unwritable = true }
            }
        }
        return report
    }

    /// Empties the shard folder `shard`.
    private func clear(shard: String, in namespace: DirectoryHandle, attributes: Bool, now: Double,
                       into report: inout Report) throws(SystemError) {
        do {
            let folder: DirectoryHandle
            do { folder = try namespace.child(shard) } catch {
                guard error.errno == .tooManySymbolicLinks || error.errno == .notDirectory else { throw error }
                // A link (or file) where a shard folder belongs: removed, never entered.
                if try namespace.remove(shard) { report.leftovers += 1 }
                return
            }
            try cache.lock.withShard(Int(shard, radix: 16) ?? 0, .exclusive) { () throws(SystemError) in
                let names = try folder.list().map(\.name)
                let sidecars = Set(names.filter(EntryNames.isSidecar).map(EntryNames.digest(of:)))
                for name in names {
                    guard let status = try folder.status(name), !status.isDirectory else { continue }
                    switch EntryNames.kind(of: name) {
                    case .image where status.isRegularFile && (attributes || sidecars.contains(EntryNames.digest(of: name))):
                        // Counted once gone: a shard that cannot be written reports nothing removed.
                        guard try folder.remove(name) else { continue }
                        report.entries.count += 1
                        report.entries.bytes += status.size
                        report.entries.allocatedBytes += status.allocatedSize
                    case .sidecar:
                        try folder.remove(name)  // part of an entry, or an orphan
                    case .temporary:
                        guard TemporaryFile.isAbandoned(name, modified: status.modified, now: now) else { continue }
                        if try folder.remove(name) { report.temporaries += 1 }
                    case .foreign where name == URLLog.fileName && status.isRegularFile:
                        // The URLs of the entries just removed. Emptied, not removed: a store running
                        // meanwhile keeps the log open and appends the URLs of its next entries to it.
                        try folder.truncate(name)
                    case .foreign where !status.isSymbolicLink:
                        continue  // not ours: left alone
                    default:
                        if try folder.remove(name) { report.leftovers += 1 }
                    }
                }
            }
        }
    }
}
