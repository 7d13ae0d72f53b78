/// What a prefetch did, counted as answers arrive (SDWebImagePrefetcher's
/// finished and skipped counts, split by cause).
public struct PrefetchSummary: Equatable, Sendable {
    /// Distinct URLs answered (repeats not included).
    public var urls = 0
    public var downloaded = 0
    /// Revalidated with the server (`--refresh`), kept or replaced.
    public var refreshed = 0
    /// Already in the cache.
    public var cached = 0
    /// Refreshes that failed for a transient reason: the cached entry served.
    public var stale = 0
    /// Taken from a remote store.
    public var fromRemotes = 0
    /// Tried and failed.
    public var failed = 0
    /// Not tried: on the failed-URL list.
    public var blacklisted = 0
    /// Not finished because the run was interrupted.
    public var interrupted = 0
    /// Not tried: the cache's disk filled up earlier in the run.
    public var notTried = 0
    /// Lines repeating a URL given before, skipped.
    public var repeats = 0
    /// List entries of other machines' parts (`--shard`), skipped.
    public var otherShards = 0
    /// A report asked for (`--stats`) could not be written.
    public var failedOutput = false
    /// Failures because the cache could not be written.
    public var unwritable = 0
    /// Failures because the downloader could not start (a C library missing, no thread, a request's file unusable).
    public var unavailable = 0
    /// The most serious status the failures so far call for (`.success` without any).
    public private(set) var status = ExitStatus.success

    public init() {}

    public mutating func count(_ outcome: FetchOutcome) {
        guard let result = outcome.result else {
            if outcome.otherShard { otherShards += 1 } else { repeats += 1 }
            return
        }
        urls += 1
        switch result {
        case .success(let fetched):
            switch fetched.cacheType {
            case .downloaded: downloaded += 1
            case .refreshed: refreshed += 1
            case .disk, .memory: cached += 1
            case .remote: fromRemotes += 1
            case .stale: stale += 1
            }
        case .failure(.blacklisted):
            blacklisted += 1
            status = .worse(status, .someFailed)
        case .failure(.interrupted): interrupted += 1
        case .failure(.cacheFull):
            notTried += 1
            status = .worse(status, .cacheUnwritable)
        case .failure(let error):
            failed += 1
            status = .worse(status, error.exitStatus)
            switch error {
            case .cacheUnwritable: unwritable += 1
            case .libraryMissing, .downloaderUnavailable, .requestFileUnusable: unavailable += 1
            default: break
            }
        }
    }

    /// Every URL is in the cache now.
    public var allCached: Bool { failed == 0 && blacklisted == 0 && interrupted == 0 && notTried == 0 }
}
