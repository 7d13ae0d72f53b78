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
    /// The run stopped because its deadline came (`--deadline`), not for a signal.
    var deadlineReached = false
    /// The run stopped downloading because the cache's disk is full (the write that found it so).
    var diskFull: SystemError?
    /// Stopped for the deadline or a full disk, not for a signal: the rest of a list is still read,
    /// and each URL answered (a hit, or not done).
    var stoppedEarly: Bool { deadlineReached || diskFull != nil }
    /// When the run must end (monotonic seconds), with `--deadline`.
    var deadline: Double?
    /// Fetches waiting on a remote store or the origin.
    var inFlight = InFlightFetches()
    /// Keys answered when repeats are answered from memory, with their answers (a prefetch's list
    /// reader skips its repeats itself, and a list's fetch looks them up again).
    var seen: Set<KeyFingerprint> = []
    var answers: [KeyFingerprint: Result<FetchResult, FetchError>] = [:]
    /// Downloads queued by this round of messages, submitted together.
    var submissions: [DownloadSubmission] = []
    /// URLs answered this round; the list reader gets them back together.
    var answered = 0
    /// Writes to remote stores not yet answered: the run waits for them.
    var pendingWrites = 0
    /// Once interrupted: when the writes still out are dropped (monotonic seconds).
    var writesDeadline: Double?
    /// The run waits only for its remote writes (interrupted), and said so.
    var awaitingWrites = false
    /// The writes still out when the wait for them ended were dropped (and counted as errors then).
    var writesDropped = false
    /// Writes answered since the interruption: written, failed, and queued ones never started.
    var writesAfterInterruption = (written: 0, failed: 0, notStarted: 0)
    /// With repeats looked up again: the keys settled lately, oldest first
    /// (a repeat looked up on the reader thread before its first answer was
    /// stored is looked up again rather than downloaded twice).
    var recentlySettled = RecentKeys(capacity: 4096)
    /// Images whose variants are being made (or wait for a worker).
    var variants = VariantQueue()
    /// Keys this run is downloading, whose locks it holds (`DownloadLocks`).
    var heldDownloadLocks: Set<KeyFingerprint> = []
    /// Downloads this process took over from a stalled holder (see `DownloadLocks.tryTakeOver`).
    var heldTakeovers: Set<KeyFingerprint> = []
    /// Images whose cached original was removed (a clear or clean in another process) before
    /// their variants were made, and how often each was looked up again (up to three times:
    /// then the failure is the answer, as a cache emptied again and again cannot keep it).
    var lookedUpAgainForVariants: [KeyFingerprint: Int] = [:]
    /// Misses another process is downloading: looked up again once it is done.
    var lockWaits: [LockWait] = []
    /// Misses waiting for a download lock, by server (`DeferredDownloads`).
    var lockDeferred = DeferredDownloads()
    var hasDeferredDownloads: Bool { !lockDeferred.isEmpty }
    /// Whether anything is left to wait for: input, transfers, writes, variants, other processes' downloads.
    var hasWork: Bool {
        inputOpen || !inFlight.isEmpty || pendingWrites > 0 || !variants.isEmpty || !lockWaits.isEmpty || hasDeferredDownloads
    }
    /// With `--per-host` or `--rate`: the download locks held for each server, so that the URLs
    /// of one server waiting their turn do not hold every lock while other servers go idle.
    var heldLocksByServer: [String: Int] = [:]
    var heldLockServers: [KeyFingerprint: String] = [:]

    /// Takes `fingerprint`'s download lock into the run's count (by `server`, when counted by server).
    mutating func holdDownloadLock(_ fingerprint: KeyFingerprint, server: String?) {
        heldDownloadLocks.insert(fingerprint)
        if let server {
            heldLockServers[fingerprint] = server
            heldLocksByServer[server, default: 0] += 1
        }
    }

    /// Lets `fingerprint`'s download lock go from the count; false when the run did not hold it.
    mutating func releaseDownloadLock(_ fingerprint: KeyFingerprint) -> Bool {
        guard heldDownloadLocks.remove(fingerprint) != nil else { return false }
        if let server = heldLockServers.removeValue(forKey: fingerprint) {
            heldLocksByServer[server, default: 1] -= 1
            if heldLocksByServer[server] == 0 { heldLocksByServer[server] = nil }
        }
        return true
    }

    mutating func deferDownload(_ outcome: LookupOutcome, _ request: PendingFetch, server: String = "") {
        lockDeferred.append(outcome, request, server: server)
    }

    /// The earliest deferred miss (in the list's order) of a server `canStart` takes, off the queue.
    mutating func nextDeferredDownload(where canStart: (String) -> Bool = { _ in true }) -> DeferredDownload? {
        lockDeferred.take(where: canStart)
    }

    /// Adds input `index` as a repeat of the deferred miss for `fingerprint`; false when there is none.
    mutating func joinDeferred(_ fingerprint: KeyFingerprint, index: Int, url: String) -> Bool {
        lockDeferred.join(fingerprint, index: index, url: url)
    }
}


/// The images waiting for their variants, and the workers' share of the
/// machine: at most `workers` at once, and within a memory budget (a job
/// alone may exceed it, so that one huge image still gets made).
struct VariantQueue {
    /// An answer held back until its variants are made.
    struct Pending {
        let fingerprint: KeyFingerprint
        let first: Int
        let url: String
        var repeats: [(Int, String)]
        /// The memory the job is expected to take, counted while it runs.
        let estimate: Int
    }

    var pending: [Int: Pending] = [:]
    var tokenByKey: [KeyFingerprint: Int] = [:]
    /// Jobs not started yet, oldest first.
    var waiting: [VariantWorkers.Job] = []
    var running = 0
    var bytesRunning = 0
    var nextToken = 0

    var isEmpty: Bool { pending.isEmpty }

    /// Holds an answer back for its variants; its job waits for a worker.
    mutating func add(_ original: FetchResult, fingerprint: KeyFingerprint, first: Int, url: String, repeats: [(Int, String)]) {
        let token = nextToken
        nextToken += 1
        let metadata = original.metadata
        // A whole decode, at worst: four bytes a pixel of every frame, and the file itself.
        let estimate = (metadata.width ?? 0) * (metadata.height ?? 0) * 4 * max(1, metadata.frameCount ?? 1) + Int(metadata.byteCount)
        pending[token] = Pending(fingerprint: fingerprint, first: first, url: url, repeats: repeats, estimate: estimate)
        tokenByKey[fingerprint] = token
        // Held open while it waits, so that a clear meanwhile cannot take its bytes away; within a bound
        // of descriptors: past it, a job opens its original when it starts.
        let held = original.isStored && waiting.count < Self.heldOriginalsLimit ? HeldOriginal(path: original.path) : nil
        waiting.append(VariantWorkers.Job(token: token, original: original, held: held))
    }

    /// How many waiting jobs hold their original open at most.
    static let heldOriginalsLimit = 128

    /// A later input with the same key joins the answer being made.
    mutating func join(_ fingerprint: KeyFingerprint, index: Int, url: String) -> Bool {
        guard let token = tokenByKey[fingerprint] else { return false }
        pending[token]?.repeats.append((index, url))
        return true
    }

    func contains(_ fingerprint: KeyFingerprint) -> Bool { tokenByKey[fingerprint] != nil }

    /// The jobs that may start now.
    mutating func startable(workers: Int, budget: Int) -> [VariantWorkers.Job] {
        var started: [VariantWorkers.Job] = []
        while let job = waiting.first, running < workers {
            let estimate = pending[job.token]?.estimate ?? 0
            guard running == 0 || bytesRunning + estimate <= budget else { break }
            waiting.removeFirst()
            running += 1
            bytesRunning += estimate
            started.append(job)
        }
        return started
    }

    /// The answer held back for `token`, once its job is done (nil: already answered).
    mutating func finish(_ token: Int, started: Bool) -> Pending? {
        guard let held = pending.removeValue(forKey: token) else { return nil }
        tokenByKey[held.fingerprint] = nil
        if started {
            running -= 1
            bytesRunning -= held.estimate
        }
        return held
    }
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

/// A miss another process is downloading, and since when (monotonic seconds).
struct LockWait {
    var request: PendingFetch
    /// When the wait began, and when the other process last showed progress (monotonic seconds).
    let since: Double
    var lastProgress: Double
    /// The key's shard, where the holder's heartbeat file is.
    let folder: String

    init(request: PendingFetch, since: Double, folder: String) {
        self.request = request
        self.since = since
        lastProgress = since
        self.folder = folder
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
    /// The remote store being asked for it, while it waits for one's answer (nil once the origin is).
    var remoteStore: Int?
    /// The bytes it must be (`URL#sha256=HEX`), if pinned.
    var pin: BytePin?
    /// Downloaded without the cross-process lock: another process held it too long.
    var unguarded = false
    /// Beaten while the download receives bytes, for another process waiting for it (when this one holds its lock).
    var heartbeat: DownloadLocks.Heartbeat?
    /// A refresh of an image kept only as its variants (`--no-original`, or an
    /// original evicted): they lend their validators, so that a 304 keeps them,
    /// and answer, stale, when the refresh fails for a passing reason.
    var keptVariants: [FetchResult.Variant]?

    init(url: String, key: CacheKey, fingerprint: KeyFingerprint, cached: CacheEntry?, firstIndex: Int, pin: BytePin? = nil) {
        self.url = url
        self.key = key
        self.fingerprint = fingerprint
        self.cached = cached
        self.firstIndex = firstIndex
        self.pin = pin
    }

    var validators: Validators? {
        if let metadata = cached?.metadata { return Validators(etag: metadata.etag, lastModified: metadata.lastModified) }
        // Variants vouch for one response only when all were made from it.
        guard let first = keptVariants?.first?.metadata,
              keptVariants!.allSatisfy({ $0.metadata.etag == first.etag && $0.metadata.lastModified == first.lastModified })
        else { return nil }
        return Validators(etag: first.etag, lastModified: first.lastModified)
    }
}

/// A cache key in 16 bytes (its MD5), for remembering millions of keys.
struct KeyFingerprint: Hashable {
    private(set) var high: UInt64
    private(set) var low: UInt64

    init(_ key: CacheKey) {
        high = key.digestHigh
        low = key.digestLow
    }

    /// A request for `key` pinned to `pin`: two pins of one URL are two requests (one
    /// is not answered with the other's result), the same pin twice is a repeat.
    init(_ key: CacheKey, pin: BytePin?) {
        self.init(key)
        if let pin {
            // Digested with the key, not mixed into it: a pin of zeros (or the key's own digits) must
            // still make another request than the unpinned one.
            let digest = MD5.hex(key.digest + "#sha256=" + pin.sha256.lowercased())
            high = UInt64(digest.prefix(16), radix: 16) ?? 0
            low = UInt64(digest.suffix(16), radix: 16) ?? 0
        }
    }

    /// One word hashed: the bits are a digest's already (every URL of a run is hashed into a set or two).
    func hash(into hasher: inout Hasher) {
        hasher.combine(high ^ low)
    }
}
