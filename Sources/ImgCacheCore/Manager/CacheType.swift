/// Where an answer came from (SDImageCacheType).
public enum CacheType: String, Equatable, Sendable {
    /// Served from this process's memory.
    case memory
    /// Served from the disk cache.
    case disk
    /// Downloaded (SDImageCacheTypeNone: from no cache; JSON keeps its name).
    case downloaded = "none"
    /// Revalidated with the server and kept or replaced.
    case refreshed
    /// Taken from a remote store (the second cache level), then stored here.
    case remote
    /// A refresh failed for a transient reason (the server unreachable, a
    /// timeout, a 5xx): the cached entry was served as it was (stale-if-error).
    case stale
}
