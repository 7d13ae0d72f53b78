/// Where an answer came from (SDImageCacheType).
public enum CacheType: String, Equatable, Sendable {
    /// Served from this process's memory.
    case memory
    /// Served from the disk cache.
    case disk
    /// Downloaded.
    case none
    /// Revalidated with the server and kept or replaced.
    case refreshed
    /// Taken from a remote store (the second cache level), then stored here.
    case remote
}
