import ImgCacheCore

/// What `imgcache serve` was told: who may ask, for what, and how much it keeps and waits.
public struct ServeSettings: Sendable {
    /// The key and salt pairs signatures are checked with.
    public var signature = URLSignature(pairs: [])
    /// `--allow-unsigned`: any signature segment is taken (as imgproxy without a key).
    public var allowsUnsigned = false
    /// Without `--allow-private-sources`: a cached answer of a source whose host reaches a private address is refused too.
    public var refusesPrivateSources = true
    /// `--allow-source`.
    public var sources = SourcePolicy.any
    /// `--presets`.
    public var presets = PresetTable()
    /// `--max-age`: the Cache-Control max-age of images, in seconds.
    public var maxAge = 31_536_000
    /// Threads making misses (`--workers`).
    public var workers = 8
    /// Misses that may wait for a worker (`--queue`) before requests are answered 503.
    public var queueLimit = 256
    /// `--memory-cache`: bytes of hot variants held in memory.
    public var memoryBudget = 64 << 20

    public init() {}
}
