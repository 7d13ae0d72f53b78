/// What `cache-info` reports about one namespace.
public struct CacheSummary: Equatable, Sendable {
    public let namespace: Namespace
    public let path: String
    /// Whether the namespace folder exists (it is made by the first store).
    public let exists: Bool
    public let entries: CacheCleaner.Tally
    /// Least and most recent last use among the entries.
    public let oldestAccess: Double?
    public let newestAccess: Double?
    public let temporaries: CacheCleaner.Tally
    /// Failed URLs remembered and not expired under the namespace's failed TTL.
    public let failedURLs: Int
    public let limits: CacheLimits
    /// Where new entries keep their metadata here.
    public let metadataPlacement: EntryMetadata.Placement
    /// Shard folders that could not be read: the counts leave them out.
    public var unreadableShards: [SystemError] = []

    /// Scans `cache`'s namespace (listing and lstat only: no file is opened).
    public static func summarize(_ cache: DiskCache, now: Double) throws(SystemError) -> CacheSummary {
        guard NamespaceMarker.mayAdopt(cache.directory) else { throw NamespaceMarker.notANamespace(cache.directory) }
        let scan = try NamespaceScan.scan(cache.directory)
        var entries = CacheCleaner.Tally(), temporaries = CacheCleaner.Tally()
        var oldest: Double?, newest: Double?
        for entry in scan.entries {
            entries.add(entry)
            oldest = min(oldest ?? entry.modified, entry.modified)
            newest = max(newest ?? entry.modified, entry.modified)
        }
        for file in scan.temporaries { temporaries.add(file) }
        let limits = CacheLimits.resolve(maxSize: nil, maxAge: nil, remembered: cache.settings)
        let failed = try FailedURLStore(namespaceDirectory: cache.directory).count(ttl: limits.failedTTL, now: now)
        let exists = (try? FileSystem.status(cache.directory)).flatMap { $0 } != nil
        let placement: EntryMetadata.Placement =
            cache.metadataPlacement == .automatic && scan.attributesSupported ? .attribute : .sidecarFile
        var summary = CacheSummary(
            namespace: cache.location.namespace, path: cache.directory, exists: exists, entries: entries,
            oldestAccess: oldest, newestAccess: newest, temporaries: temporaries,
            failedURLs: failed.remembered - failed.expired,
            limits: limits,
            metadataPlacement: placement)
        summary.unreadableShards = scan.unreadableShards
        return summary
    }
}
