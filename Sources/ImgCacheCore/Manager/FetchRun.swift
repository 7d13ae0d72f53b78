/// The state of one `fetch` or `prefetch` run, owned by the manager's thread.
struct FetchRun {
    /// How a URL given again is answered.
    enum Repeats {
        /// From the first one's answer, kept in memory (fetch URL...).
        case answeredFromMemory
        /// Not at all: a nil result (prefetch, which only counts them).
        case skipped
        /// From the first one's answer while it is in flight, else looked
        /// up again: nothing is kept per answered URL (fetch of a list).
        case lookedUpAgain
    }

    let repeats: Repeats
    let list: URLList?
    /// The list reader gets credits back as URLs are answered (else the caller gives them).
    var releasesOnAnswer = true
    var wantsIdle = false
    var nextIndex = 0
    var inputOpen = true
    var interrupted = false
    /// Fetches waiting on a remote store or the origin.
    var inFlight = InFlightFetches()
    /// Keys answered, unless repeats are looked up again; answered from memory, their answers too.
    var seen: Set<KeyFingerprint> = []
    var answers: [KeyFingerprint: Result<FetchResult, FetchError>] = [:]
    /// Downloads queued by this round of messages, submitted together.
    var submissions: [DownloadSubmission] = []
    /// URLs answered this round; the list reader gets them back together.
    var answered = 0
    /// Writes to remote stores not yet answered: the run waits for them.
    var pendingWrites = 0
    /// With repeats looked up again: the keys settled lately, oldest first
    /// (a repeat looked up on the reader thread before its first answer was
    /// stored is looked up again rather than downloaded twice).
    var recentlySettled = RecentKeys(capacity: 4096)
}

/// The last `capacity` keys added, in bounded memory.
struct RecentKeys {
    let capacity: Int
    private var members: Set<KeyFingerprint> = []
    private var order: [KeyFingerprint] = []
    private var oldest = 0

    init(capacity: Int) {
        self.capacity = capacity
    }

    func contains(_ key: KeyFingerprint) -> Bool { members.contains(key) }

    mutating func add(_ key: KeyFingerprint) {
        guard members.insert(key).inserted else { return }
        if order.count < capacity {
            order.append(key)
        } else {
            members.remove(order[oldest])
            order[oldest] = key
            oldest = (oldest + 1) % capacity
        }
    }
}

/// A URL that needs the network, and the inputs that asked for it.
struct PendingFetch {
    /// The URL as given (its fragment dropped).
    let url: String
    let key: CacheKey
    let fingerprint: KeyFingerprint
    /// The entry being revalidated (RefreshCached), if any.
    let cached: CacheEntry?
    let firstIndex: Int
    /// Later inputs with the same key, answered with this one.
    var repeats: [(Int, String)] = []
    /// The failed list had a record for the key (expired, or ignored by RetryFailed).
    var hadFailedRecord = false
    /// Where the origin has it (set once a download is decided).
    var origin: RemoteURL?
    /// The remote store being asked for it, if any.
    var remoteStore: Int?

    init(url: String, key: CacheKey, fingerprint: KeyFingerprint, cached: CacheEntry?, firstIndex: Int) {
        self.url = url
        self.key = key
        self.fingerprint = fingerprint
        self.cached = cached
        self.firstIndex = firstIndex
    }

    var validators: Validators? {
        cached.flatMap { Validators(etag: $0.metadata.etag, lastModified: $0.metadata.lastModified) }
    }
}

/// A cache key in 16 bytes (its MD5), for remembering millions of keys.
struct KeyFingerprint: Hashable {
    let high: UInt64
    let low: UInt64

    init(_ key: CacheKey) {
        high = UInt64(key.digest.prefix(16), radix: 16) ?? 0
        low = UInt64(key.digest.suffix(16), radix: 16) ?? 0
    }
}
