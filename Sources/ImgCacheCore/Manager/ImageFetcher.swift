#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Answers "give me these images" (SDWebImageManager's loadImage flow): for
/// each URL, the failed-URL list, then the cache, then a download (all misses
/// through one `Downloader`, coalesced), a check of the bytes, an atomic store,
/// and the answer with where it came from.
///
/// The download thread only moves bytes; checking and storing happen on the
/// calling thread as downloads finish. `fetch` answers in the order of its
/// URLs; `prefetch` streams a list of any length in bounded memory.
public final class ImageFetcher {
    public let cache: DiskCache
    /// Consulted, in order, after `cache` misses; never written.
    public let readOnlyCaches: [ReadOnlyCache]
    public let settings: FetchSettings
    public let downloaderConfiguration: DownloadConfiguration
    /// Called with a line of detail for `-v`; nil when nobody listens, so that
    /// no detail text is even built.
    public var log: ((String) -> Void)?
    /// Called on the calling thread with a URL's bytes received so far and the
    /// announced length (ProgressiveDownload only).
    public var progress: ((String, Int64, Int64?) -> Void)?
    /// Lets another thread (a signal watcher) stop the run.
    public let interruption: FetchInterruption
    /// Called once, on the calling thread, before the run starts a thread of
    /// its own (the first download, or a prefetch): where to start a signal
    /// watcher, which must see no other threads yet. A run of hits never calls it.
    public var beforeFirstThread: (() -> Void)?

    private let failedURLs: FailedURLStore
    /// Read from the namespace only when a failure record is found.
    private var resolvedFailedTTL: AgeLimit?
    /// Created on the first miss, so a hit never loads libcurl.
    private var downloader: Downloader?
    private var downloaderFailure: FetchError?
    private let messages: BlockingQueue<FetchMessage>
    /// The namespace folder and its lock file were made (or found) once.
    private var storesPrepared = false
    /// Messages of a run may outlive it (answers in flight when it threw), so
    /// one fetcher serves one run.
    private var hasRun = false

    public init(cache: DiskCache, readOnlyCaches: [ReadOnlyCache] = [], settings: FetchSettings = FetchSettings(),
                downloaderConfiguration: DownloadConfiguration = DownloadConfiguration()) {
        self.cache = cache
        self.readOnlyCaches = readOnlyCaches
        self.settings = settings
        self.downloaderConfiguration = downloaderConfiguration
        failedURLs = FailedURLStore(namespaceDirectory: cache.directory)
        messages = BlockingQueue()
        interruption = FetchInterruption(messages: messages)
    }

    /// Fetches `urls`, handing each answer to `deliver` in the order of `urls`,
    /// each as soon as it and all before it are known. A URL given again is
    /// fetched once and answered again from memory (cache type `memory`). An
    /// error thrown by `deliver` stops the run and is rethrown.
    public func fetch<E: Error>(_ urls: [String], deliver: (Int, Result<FetchResult, FetchError>) throws(E) -> Void) throws(E) {
        precondition(!hasRun, "an ImageFetcher runs once")
        messages.push(.input(urls.map { .url($0, line: 0) } + [.end]))
        var answers = [Result<FetchResult, FetchError>?](repeating: nil, count: urls.count)
        var delivered = 0
        var run = Run(repeats: .answeredFromMemory, list: nil)
        try self.run(&run, emit: { (outcome: FetchOutcome) throws(E) in
            answers[outcome.index] = outcome.result
            while delivered < answers.count, let ready = answers[delivered] {
                answers[delivered] = nil
                defer { if case .success(let result) = ready, !result.isStored { try? FileSystem.remove(result.path) } }
                try deliver(delivered, ready)
                delivered += 1
            }
        }, update: { (_: PrefetchUpdate) throws(E) in })
    }

    /// Fetches the URLs of `list` as `fetch(_:deliver:)` does, answering each
    /// in the order of the list, but streaming: at most `window` URLs are read
    /// ahead of the answers delivered, so a list of any length takes the same
    /// memory. A URL repeated while its first request runs shares its answer;
    /// one repeated later is looked up again (a hit, usually).
    public func fetch<E: Error>(_ list: URLList, window: Int, deliver: (FetchOutcome) throws(E) -> Void,
                                update report: (PrefetchUpdate) throws(E) -> Void) throws(E) {
        var waiting: [Int: FetchOutcome] = [:]
        var next = 0
        try stream(list, window: window, repeats: .lookedUpAgain, releasesOnAnswer: false, deliver: { (update: PrefetchUpdate) throws(E) in
            guard case .answered(let outcome) = update else { return try report(update) }
            waiting[outcome.index] = outcome
            var delivered = 0
            while let ready = waiting.removeValue(forKey: next) {
                try deliver(ready)
                next += 1
                delivered += 1
            }
            // The reader may read as many more as were delivered in order: a
            // slow first URL holds the window, not memory.
            list.release(delivered)
        })
    }

    /// What a prefetch tells its caller as it goes.
    public enum PrefetchUpdate: Sendable {
        case answered(FetchOutcome)
        /// The list has this many URL lines (known early for regular files, else at its end).
        case length(Int)
        /// The list could not be read to its end; what was read is still answered.
        case inputFailed(SystemError)
        /// Nothing happened for a quarter of a second (for progress displays).
        case idle
    }

    /// Streams `list`: each distinct URL answered as it finishes (completion
    /// order), repeats answered with a nil result, at most `window` URLs
    /// between the list reader and the answers. Memory stays flat but for 16
    /// bytes per distinct key.
    public func prefetch<E: Error>(_ list: URLList, window: Int, deliver: (PrefetchUpdate) throws(E) -> Void) throws(E) {
        try stream(list, window: window, repeats: .skipped, releasesOnAnswer: true, deliver: deliver)
    }

    /// Runs the URLs of `list` with lookups on a pool of threads.
    /// `releasesOnAnswer`: the reader gets a URL's credit back as soon as it is
    /// answered; otherwise the caller gives credits back.
    private func stream<E: Error>(_ list: URLList, window: Int, repeats: Run.Repeats, releasesOnAnswer: Bool,
                                  deliver: (PrefetchUpdate) throws(E) -> Void) throws(E) {
        precondition(!hasRun, "an ImageFetcher runs once")
        announceThreads()
        var run = Run(repeats: repeats, list: list)
        run.releasesOnAnswer = releasesOnAnswer
        let messages = self.messages
        // Worker threads answer hits in parallel; the TTL is read up front for them.
        let ttl = failedTTL()
        let lookup = Lookup(wantsNotes: log != nil, settings: settings, cache: cache, readOnlyCaches: readOnlyCaches, failedURLs: failedURLs)
        run.lookups = try? LookupPool(threads: ImageFetcher.lookupThreads, messages: messages) { job, lockHandle in
            lookup.run(job.url, key: job.key, ttl: { ttl }, lockHandle: lockHandle)
        }
        defer { run.lookups?.stop() }
        // Stopped before the pool (defers run last first), so nothing new arrives while it winds down.
        defer { list.stop() }
        do {
            try list.start(window: window) { items in messages.push(.input(items)) }
        } catch {
            try deliver(.inputFailed(error))
            return
        }
        run.wantsIdle = true
        try self.run(&run, emit: { (outcome: FetchOutcome) throws(E) in try deliver(.answered(outcome)) }, update: deliver)
    }

    /// Stops transfers still running, writes the cookie jar and ends the download
    /// thread. Bodies that finished after a run stopped early (its delivery
    /// threw) are removed.
    public func close() {
        downloader?.close()
        while let message = messages.tryPop() {
            if case .finished(_, .success(let file)) = message, let spilled = file.spilledPath { try? FileSystem.remove(spilled) }
        }
    }

    // MARK: - The run

    /// The state of one `fetch` or `prefetch`.
    private struct Run {
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
        /// Downloads in flight by slot, and the slot of each key in flight.
        var pending: [Int: PendingFetch] = [:]
        var slotByKey: [KeyFingerprint: Int] = [:]
        var nextSlot = 0
        /// Keys answered, unless repeats are looked up again; answered from memory, their answers too.
        var seen: Set<KeyFingerprint> = []
        var answers: [KeyFingerprint: Result<FetchResult, FetchError>] = [:]
        /// Downloads queued by this round of messages, submitted together.
        var submissions: [DownloadSubmission] = []
        /// URLs answered this round; the list reader gets them back together.
        var answered = 0
        /// Threads that look URLs up (prefetch), so that hits use every core.
        var lookups: LookupPool?
    }

    /// Handles messages until the input has ended (or the run was
    /// interrupted) and no download is left; answers go to `emit`.
    private func run<E: Error>(_ run: inout Run, emit: (FetchOutcome) throws(E) -> Void,
                               update emitUpdate: (PrefetchUpdate) throws(E) -> Void) throws(E) {
        do throws(E) {
            defer { hasRun = true }
            while run.inputOpen || !run.pending.isEmpty {
                if interruption.signal != nil, !run.interrupted { stopAll(&run) }
                if run.interrupted, run.pending.isEmpty, run.list != nil {
                    // URLs already read are answered `interrupted`, so the summary counts them.
                    while let message = messages.tryPop() { try handle(message, &run, emit: emit, update: emitUpdate) }
                    break
                }
                let first: FetchMessage
                if run.wantsIdle {
                    guard let message = messages.pop(timeout: 0.25) else {
                        try emitUpdate(.idle)
                        continue
                    }
                    first = message
                } else {
                    first = messages.pop()
                }
                // Everything already queued is handled before the batch of new downloads is submitted.
                var message: FetchMessage? = first
                var handled = 0
                while let current = message {
                    try handle(current, &run, emit: emit, update: emitUpdate)
                    handled += 1
                    if interruption.signal != nil, !run.interrupted { stopAll(&run) }
                    message = handled < 4096 ? messages.tryPop() : nil
                }
                submitQueued(&run)
                if run.releasesOnAnswer { run.list?.release(run.answered) }
                run.answered = 0
            }
        } catch {
            downloader?.cancelAll()
            throw error
        }
    }

    private func submitQueued(_ run: inout Run) {
        guard !run.submissions.isEmpty else { return }
        let batch = run.submissions
        run.submissions.removeAll()
        downloader?.submit(batch)
    }

    /// Stops starting work and cancels the transfers; their answers (cancelled) still come.
    private func stopAll(_ run: inout Run) {
        run.interrupted = true
        run.list?.stop()
        if run.list != nil { run.inputOpen = false }
        // Queued before the cancellation, so that it reaches them too.
        submitQueued(&run)
        downloader?.cancelAll()
        log?("interrupted: no new work is started")
    }

    private func handle<E: Error>(_ message: FetchMessage, _ run: inout Run,
                                  emit: (FetchOutcome) throws(E) -> Void,
                                  update emitUpdate: (PrefetchUpdate) throws(E) -> Void) throws(E) {
        switch message {
        case .wake:
            break
        case .input(let items):
            for item in items {
                if interruption.signal != nil, !run.interrupted { stopAll(&run) }
                try handle(item, &run, emit: emit, update: emitUpdate)
            }
        case .event(let slot, .retrying(let attempt, let total, let delay, let error)):
            guard let miss = run.pending[slot] else { return }
            log?("retry \(attempt) of \(total) in \(Self.formatDelay(delay)) for \(RemoteURL.displayed(miss.text)): \(error.reason)")
        case .event(let slot, .progress(let received, let expected)):
            guard let miss = run.pending[slot] else { return }
            progress?(miss.text, received, expected)
        case .looked(let slot, let outcome):
            guard let request = run.pending[slot] else { return }
            try proceed(outcome, request, slot: slot, &run, emit: emit)
        case .finished(let slot, let result):
            guard let miss = run.pending.removeValue(forKey: slot) else { return }
            run.slotByKey[miss.fingerprint] = nil
            let answer = run.interrupted && Self.isCancellation(result)
                ? .failure(.interrupted(url: miss.text)) : store(result, for: miss)
            remember(answer, for: miss)
            try settle(miss.fingerprint, answer, first: miss.firstIndex, url: miss.text, repeats: miss.repeats, &run, emit: emit)
        }
    }

    private func handle<E: Error>(_ item: URLList.Item, _ run: inout Run,
                                  emit: (FetchOutcome) throws(E) -> Void,
                                  update emitUpdate: (PrefetchUpdate) throws(E) -> Void) throws(E) {
        switch item {
        case .url(let url, _):
            let index = run.nextIndex
            run.nextIndex += 1
            if run.interrupted {
                try emit(FetchOutcome(index: index, url: url, result: .failure(.interrupted(url: url))))
                run.answered += 1
                return
            }
            try begin(url, index: index, &run, emit: emit)
        case .rejected(let text, _, let reason):
            let index = run.nextIndex
            run.nextIndex += 1
            try emit(FetchOutcome(index: index, url: text, result: .failure(.invalidURL(url: text, reason: reason))))
            run.answered += 1
        case .length(let count):
            try emitUpdate(.length(count))
        case .end:
            run.inputOpen = false
            if run.list != nil { try emitUpdate(.length(run.nextIndex)) }
        case .failed(let error):
            run.inputOpen = false
            try emitUpdate(.inputFailed(error))
        }
    }

    /// The failed-URL list follows each answer: lasting failures are remembered, successes forgotten.
    private func remember(_ answer: Result<FetchResult, FetchError>, for miss: PendingFetch) {
        switch answer {
        case .failure(let error):
            guard let scope = error.rememberedScope(plainRequest: settings.isPlainRequest) else { return }
            do {
                try failedURLs.record(Lookup.failureKey(miss.text), url: miss.text, reason: error.recordedReason, scope: scope, now: WallClock.now())
                log?("\(RemoteURL.displayed(miss.text)): remembered as failed")
            } catch {
                log?("cannot remember the failure of \(RemoteURL.displayed(miss.text)): \(error)")
            }
        case .success:
            // Only when one may exist: the lookup saw it, or skipped looking (RetryFailed).
            if miss.hadFailedRecord || settings.options.contains(.retryFailed) { failedURLs.remove(Lookup.failureKey(miss.text)) }
        }
    }

    /// Answers the first request for a key and its repeats.
    private func settle<E: Error>(_ fingerprint: KeyFingerprint, _ answer: Result<FetchResult, FetchError>, first: Int, url: String,
                                  repeats: [(Int, String)], _ run: inout Run, emit: (FetchOutcome) throws(E) -> Void) throws(E) {
        if run.repeats != .lookedUpAgain { run.seen.insert(fingerprint) }
        if run.repeats == .answeredFromMemory { run.answers[fingerprint] = answer }
        try emit(FetchOutcome(index: first, url: url, result: answer))
        run.answered += 1
        for (index, repeatURL) in repeats {
            try emit(FetchOutcome(index: index, url: repeatURL, result: run.repeats == .skipped ? nil : Self.fromMemory(answer, url: repeatURL)))
            run.answered += 1
        }
    }

    private static func fromMemory(_ answer: Result<FetchResult, FetchError>, url: String) -> Result<FetchResult, FetchError> {
        answer.map { $0.fromMemory(url: url) }
    }

    /// One input URL: answered at once (a repeat, the failed list, a hit, a
    /// refusal) or queued for download.
    private func begin<E: Error>(_ given: String, index: Int, _ run: inout Run, emit: (FetchOutcome) throws(E) -> Void) throws(E) {
        // A fragment never reaches a server, so it is no part of the request or the key.
        let url = URLText.withoutFragment(given)
        let key = settings.cacheKey(for: url)
        let fingerprint = KeyFingerprint(key)
        if let slot = run.slotByKey[fingerprint] {
            if run.repeats != .skipped {
                run.pending[slot]?.repeats.append((index, url))
            } else {
                // prefetch keeps nothing per repeat: it is answered now, whatever the first one becomes.
                try emit(FetchOutcome(index: index, url: url, result: nil))
                run.answered += 1
            }
            return
        }
        if run.seen.contains(fingerprint) {
            let answer = run.answers[fingerprint].map { Self.fromMemory($0, url: url) }
            try emit(FetchOutcome(index: index, url: url, result: answer))
            run.answered += 1
            return
        }
        if let pool = run.lookups {
            // Looked up on the pool's threads; the answer comes back as a message.
            let slot = run.nextSlot
            run.nextSlot += 1
            run.pending[slot] = PendingFetch(text: url, key: key, fingerprint: fingerprint, cached: nil, firstIndex: index)
            run.slotByKey[fingerprint] = slot
            pool.submit(LookupJob(slot: slot, url: url, key: key))
            return
        }
        let outcome = lookUp(url, key: key, ttl: failedTTL)
        try proceed(outcome, PendingFetch(text: url, key: key, fingerprint: fingerprint, cached: nil, firstIndex: index),
                    slot: nil, &run, emit: emit)
    }

    /// What a lookup found: an answer, or a download to make.
    enum LookupOutcome: Sendable {
        case answer(Result<FetchResult, FetchError>, note: String?)
        /// A string that is not a fetchable URL: answered at once, never requested.
        case refused(FetchError)
        case download(RemoteURL, cached: CacheEntry?, note: String?, failedBefore: Bool)
    }

    /// The failed list, the cache and the read-only folders for one URL.
    private func lookUp(_ url: String, key: CacheKey, ttl: () -> AgeLimit) -> LookupOutcome {
        Lookup(wantsNotes: log != nil, settings: settings, cache: cache, readOnlyCaches: readOnlyCaches, failedURLs: failedURLs).run(url, key: key, ttl: ttl)
    }
}

/// One URL's lookup: values only, so the lookup pool's threads run it too.
///
/// The cache answers first: a cached entry is always served, and the
/// failed-URL list answers only misses.
struct Lookup: Sendable {
    /// Failures are remembered per URL as requested (without its fragment):
    /// neither the key filter nor a transform applies, since a failure of one
    /// signed URL says nothing of a freshly signed one.
    static func failureKey(_ url: String) -> CacheKey {
        CacheKey(url, fileExtension: nil)
    }

    /// Whether to describe what was found (for -v); building the text costs more than a hit.
    let wantsNotes: Bool
    let settings: FetchSettings
    let cache: DiskCache
    let readOnlyCaches: [ReadOnlyCache]
    let failedURLs: FailedURLStore

    typealias LookupOutcome = ImageFetcher.LookupOutcome

    func run(_ url: String, key: CacheKey, ttl: () -> AgeLimit, lockHandle: NamespaceLock.Handle? = nil) -> LookupOutcome {
        let now = WallClock.now()
        let options = settings.options
        var cached: CacheEntry?
        var note: String?
        if !options.contains(.fromLoaderOnly) {
            switch cache.lookup(key, now: now, lockHandle: lockHandle) {
            case .hit(let entry): cached = entry
            case .miss: break
            case .damaged(let path, let reason, let removed):
                note = wantsNotes ? "damaged entry \(path): \(reason)" + (removed ? "; removed, fetching again" : "") : nil
            }
            if let entry = cached, !options.contains(.refreshCached) {
                return .answer(.success(FetchResult(url: url, path: entry.path, cacheType: .disk, metadata: entry.metadata)),
                               note: wantsNotes ? "hit: \(entry.path)" : nil)
            }
            // Read-only folders answer misses; a refresh always goes to the server.
            if cached == nil, !options.contains(.refreshCached),
               let entry = readOnlyCaches.lazy.compactMap({ $0.lookup(key) }).first {
                return .answer(.success(FetchResult(url: url, path: entry.path, cacheType: .disk, metadata: entry.metadata)),
                               note: wantsNotes ? "hit (read-only): \(entry.path)" : nil)
            }
        }
        let remote: RemoteURL
        do {
            remote = try RemoteURL(parsing: url)
        } catch {
            switch error {
            case .invalid(let reason): return .refused(.invalidURL(url: url, reason: reason))
            case .unsupportedScheme(let scheme): return .refused(.unsupportedScheme(url: url, scheme: scheme))
            }
        }
        if options.contains(.fromCacheOnly) { return .answer(.failure(.notCached(url: url)), note: note) }
        var failedBefore = false
        // A refresh revalidates an entry that is there: the list answers misses only.
        if cached == nil, !options.contains(.retryFailed),
           let record = failedURLs.lookup(Lookup.failureKey(url), ttl: .never, now: now) {
            failedBefore = true
            let ttl = ttl()
            if record.scope.covers(plainRequest: settings.isPlainRequest, sizeLimit: settings.maximumBytes),
               !ttl.isExpired(record.failedAt, now: now) {
                return .answer(.failure(.blacklisted(url: url, reason: record.reason, failedAt: record.failedAt, ttl: ttl, now: now)),
                               note: wantsNotes ? "\(RemoteURL.displayed(url)): on the failed list since \(Timestamp.iso8601(record.failedAt))" : nil)
            }
        }
        return .download(remote, cached: cached, note: note, failedBefore: failedBefore)
    }
}

extension ImageFetcher {

    /// Acts on a lookup's outcome for `request` (registered under `slot` when
    /// the pool looked it up): answers it, or queues its download.
    private func proceed<E: Error>(_ outcome: LookupOutcome, _ request: PendingFetch, slot existing: Int?, _ run: inout Run,
                                   emit: (FetchOutcome) throws(E) -> Void) throws(E) {
        func answer(_ result: Result<FetchResult, FetchError>) throws(E) {
            if let existing {
                run.pending[existing] = nil
                run.slotByKey[request.fingerprint] = nil
            }
            try settle(request.fingerprint, result, first: request.firstIndex, url: request.text, repeats: request.repeats, &run, emit: emit)
        }
        let remote: RemoteURL, cached: CacheEntry?, failedBefore: Bool
        switch outcome {
        case .answer(let result, let note):
            if let note { log?(note) }
            // A success under RetryFailed takes the URL off the list, a cached one too.
            if case .success = result, settings.options.contains(.retryFailed) { failedURLs.remove(Lookup.failureKey(request.text)) }
            try answer(result)
            return
        case .refused(let failure):
            try answer(.failure(failure))
            return
        case .download(let url, let entry, let note, let failed):
            if let note { log?(note) }
            (remote, cached, failedBefore) = (url, entry, failed)
        }
        if run.interrupted {
            try answer(.failure(.interrupted(url: request.text)))
            return
        }
        var miss = PendingFetch(text: request.text, key: request.key, fingerprint: request.fingerprint,
                                cached: cached, firstIndex: request.firstIndex)
        miss.repeats = request.repeats
        miss.hadFailedRecord = failedBefore
        do throws(FetchError) {
            let downloader = try startDownloader()
            let bodyDirectory = try bodyDirectory(for: request.key)
            let slot = existing ?? run.nextSlot
            if existing == nil { run.nextSlot += 1 }
            log?("download: \(RemoteURL.displayed(request.text))" + (miss.validators != nil ? " (conditional)" : ""))
            let downloadRequest = settings.request(for: remote, bodyDirectory: bodyDirectory, validators: miss.validators)
            let messages = self.messages
            let wantsProgress = progress != nil && settings.options.contains(.progressiveDownload)
            let submission = DownloadSubmission(
                request: downloadRequest, priority: settings.priority,
                onEvent: { event in
                    if case .progress = event, !wantsProgress { return }
                    messages.push(.event(slot, event))
                },
                completion: { result in messages.push(.finished(slot, result)) })
            _ = downloader
            run.pending[slot] = miss
            run.slotByKey[request.fingerprint] = slot
            run.submissions.append(submission)
        } catch {
            try answer(.failure(error))
        }
    }

    /// The folder a body too large for memory goes to: its entry's shard, so
    /// that storing it is a rename within one folder (made when first needed);
    /// with CacheMemoryOnly the system's temporary folder, so the cache is not
    /// written. The namespace and its lock file are made once, before the first
    /// download, so that a cache that cannot be written fails before any traffic.
    private func bodyDirectory(for key: CacheKey) throws(FetchError) -> String {
        if settings.options.contains(.cacheMemoryOnly) { return memoryOnlyDirectory }
        do {
            if !storesPrepared {
                try cache.prepareForStores()
                storesPrepared = true
            }
            // Checked before a body may be written there: never through a link.
            return try cache.prepareShard(for: key)
        } catch {
            throw .cacheUnwritable(error)
        }
    }

    private func failedTTL() -> AgeLimit {
        if let resolvedFailedTTL { return resolvedFailedTTL }
        let ttl = settings.failedTTL ?? NamespaceSettings.load(from: cache.directory).failedTTL ?? FailedURLStore.defaultTTL
        resolvedFailedTTL = ttl
        return ttl
    }

    /// The downloader, started on the first miss; an unwritable cache or a
    /// missing libcurl fails every miss before any traffic.
    private func startDownloader() throws(FetchError) -> Downloader {
        if let downloader { return downloader }
        if let downloaderFailure { throw downloaderFailure }
        announceThreads()
        do {
            let started = try Downloader(configuration: downloaderConfiguration)
            downloader = started
            return started
        } catch {
            let failure: FetchError
            switch error {
            case .libraryMissing(let message): failure = .libraryMissing(message)
            default: failure = .libraryMissing(error.reason)
            }
            downloaderFailure = failure
            throw failure
        }
    }

    private static func isCancellation(_ result: Result<DownloadedFile, DownloadError>) -> Bool {
        if case .failure(.cancelled) = result { return true }
        return false
    }

    // MARK: - Checking and storing

    /// Turns a finished download into a cache entry (or a freshened one after a 304).
    private func store(_ result: Result<DownloadedFile, DownloadError>, for miss: PendingFetch) -> Result<FetchResult, FetchError> {
        let url = miss.text
        let file: DownloadedFile
        switch result {
        case .success(let downloaded): file = downloaded
        case .failure(.localWrite(let error)): return .failure(.cacheUnwritable(error))
        case .failure(.libraryMissing(let message)): return .failure(.libraryMissing(message))
        case .failure(let error):
            // A refresh told that the image is gone removes the entry, so that the
            // cache never holds what the failed list refuses; other failures keep it.
            if let cached = miss.cached, case .httpStatus(let code) = error, code == 404 || code == 410 {
                do {
                    try cache.remove(cached, key: miss.key)
                    log?("\(RemoteURL.displayed(url)): HTTP \(code) on refresh; removed \(cached.path)")
                } catch {
                    log?("\(RemoteURL.displayed(url)): cannot remove \(cached.path): \(error)")
                }
            }
            return .failure(.download(url: url, error))
        }
        let response = file.response
        if let log {
            let shown = RemoteURL.displayed(url)
            if response.effectiveURL != url { log("\(shown): redirected to \(RemoteURL.displayed(response.effectiveURL))") }
            let retried = response.attempts > 1 ? " after \(response.attempts) attempts" : ""
            log("\(shown): HTTP \(response.statusCode), \(response.byteCount) bytes in \(Int(response.elapsed * 1000)) ms\(retried)")
        }

        let now = WallClock.now()
        if response.notModified, let cached = miss.cached {
            var metadata = cached.metadata
            metadata.storedAt = now
            if let etag = response.etag { metadata.etag = etag }
            if let lastModified = response.lastModified { metadata.lastModified = lastModified }
            do {
                guard let entry = try cache.replaceMetadata(of: cached, with: metadata, key: miss.key, now: now)
                    ?? cache.lookup(miss.key, now: now).entry else {
                    return .failure(.download(url: url, .other(code: 0, message: "the cached copy changed while it was revalidated")))
                }
                log?("\(RemoteURL.displayed(url)): not modified, kept \(entry.path)")
                return .success(FetchResult(url: url, path: entry.path, cacheType: .refreshed, metadata: entry.metadata))
            } catch {
                return .failure(.cacheUnwritable(error))
            }
        }

        let header: ImageHeader, bytes: [UInt8]
        do throws(FetchError) {
            (header, bytes) = try verify(file, url: url)
        } catch {
            return .failure(error)
        }
        func describe(inode: UInt64, size: Int64) -> EntryMetadata {
            EntryMetadata(fileName: miss.key.fileName, inode: inode, byteCount: size, key: miss.key.storedForm, url: RemoteURL.redacted(url),
                          etag: response.etag, lastModified: response.lastModified, contentType: response.contentType,
                          format: header.format, width: header.width, height: header.height,
                          frameCount: header.frameCount, storedAt: now)
        }
        if let transform = settings.transform,
           !transform.keepsAsServed(width: header.width, height: header.height, format: header.format, frameCount: header.frameCount ?? 1) {
            return storeTransformed(file, bytes: bytes, transform: transform, for: miss, now: now)
        }
        if settings.options.contains(.cacheMemoryOnly) {
            log?("\(RemoteURL.displayed(url)): not stored (CacheMemoryOnly)")
            do {
                let path = try handOver(bytes)
                return .success(FetchResult(url: url, path: path, cacheType: .none,
                                            metadata: describe(inode: 0, size: response.byteCount), isStored: false))
            } catch {
                return .failure(.cacheUnwritable(error))
            }
        }
        do {
            // A body that went to a file (in the shard folder) is renamed into place;
            // one in memory is written to a temporary file there first.
            let pending: PendingEntry
            if let spilled = file.spilledPath {
                pending = cache.adopt(spilled, for: miss.key)
            } else {
                pending = try cache.beginStore(for: miss.key)
                try FileSystem.writeAll(pending.descriptor, bytes, path: pending.temporaryPath)
            }
            defer { pending.discard() }
            let entry = try cache.commit(pending, superseding: superseded(by: miss), describe: describe)
            return .success(FetchResult(url: url, path: entry.path, cacheType: miss.cached == nil ? .none : .refreshed,
                                        metadata: entry.metadata))
        } catch {
            return .failure(.cacheUnwritable(error))
        }
    }

    /// Files a new entry for `miss` replaces under another name: the entry a
    /// refresh revalidated (its format may have changed), or with
    /// FromLoaderOnly, which looked nothing up, every name the key can have.
    /// After a plain miss there is none: the lookup tried every name.
    private func superseded(by miss: PendingFetch) -> [String] {
        if let cached = miss.cached { return [cached.path] }
        guard settings.options.contains(.fromLoaderOnly) else { return [] }
        let shard = cache.shardDirectory(for: miss.key) + "/"
        return miss.key.candidateFileNames.map { shard + $0 }
    }

    /// With CacheMemoryOnly, `bytes` in a new temporary file of the system's
    /// temporary folder, removed once the answer is delivered.
    private func handOver(_ bytes: [UInt8]) throws(SystemError) -> String {
        let (descriptor, path) = try TemporaryFile.create(in: memoryOnlyDirectory, tag: "memory")
        defer { Glibc.close(descriptor) }
        do { try FileSystem.writeAll(descriptor, bytes, path: path) } catch {
            try? FileSystem.remove(path)
            throw error
        }
        return path
    }

    /// Where CacheMemoryOnly bodies go: `$TMPDIR`, else /tmp; never the cache.
    private var memoryOnlyDirectory: String {
        guard let value = getenv("TMPDIR"), value.pointee != 0 else { return "/tmp" }
        return String(cString: value)
    }

    /// Decodes a download, transforms its first frame, encodes it and stores that
    /// (or with CacheMemoryOnly hands it over in a temporary file).
    private func storeTransformed(_ file: DownloadedFile, bytes: [UInt8], transform: ImageTransform, for miss: PendingFetch,
                                  now: Double) -> Result<FetchResult, FetchError> {
        let url = miss.text
        let result: ImageTransform.Output
        do throws(FetchError) {
            let image: DecodedImage
            // Only the first frame, unless every frame is transformed.
            do {
                image = try ImageDecoder.decode(bytes, maximumPixels: settings.maximumPixels,
                                                maximumFrames: transform.transformsAnimations ? 0 : 1)
            } catch {
                switch error {
                case .libraryMissing(let message): throw .libraryMissing(message)
                default: throw .notUsable(url: url, reason: error.description)
                }
            }
            do { result = try transform.apply(to: image) } catch {
                switch error {
                case .libraryMissing(let message): throw .libraryMissing(message)
                default: throw .notUsable(url: url, reason: error.description)
                }
            }
        } catch {
            return .failure(error)
        }
        log?("\(RemoteURL.displayed(url)): \(transform.key) -> \(result.width)x\(result.height) \(result.format.displayName), \(result.bytes.count) bytes")
        let response = file.response
        func describe(inode: UInt64, size: Int64) -> EntryMetadata {
            EntryMetadata(fileName: miss.key.fileName, inode: inode, byteCount: size, key: miss.key.storedForm, url: RemoteURL.redacted(url),
                          etag: response.etag, lastModified: response.lastModified, contentType: ImageTransform.mediaType(result.format),
                          format: result.format, width: result.width, height: result.height, frameCount: result.frameCount,
                          storedAt: now)
        }
        do throws(SystemError) {
            if settings.options.contains(.cacheMemoryOnly) {
                return .success(FetchResult(url: url, path: try handOver(result.bytes), cacheType: .none,
                                            metadata: describe(inode: 0, size: Int64(result.bytes.count)), isStored: false))
            }
            let pending = try cache.beginStore(for: miss.key)
            defer { pending.discard() }
            try FileSystem.writeAll(pending.descriptor, result.bytes, path: pending.temporaryPath)
            let entry = try cache.commit(pending, superseding: superseded(by: miss), describe: describe)
            return .success(FetchResult(url: url, path: entry.path, cacheType: miss.cached == nil ? .none : .refreshed,
                                        metadata: entry.metadata))
        } catch {
            return .failure(.cacheUnwritable(error))
        }
    }

    /// Accepts the downloaded bytes only if they are a supported image whose
    /// header decodes, within the pixel limit, and with `--verify full` whose
    /// every pixel decodes. Returns the header and the bytes, for a transform.
    private func verify(_ file: DownloadedFile, url: String) throws(FetchError) -> (ImageHeader, [UInt8]) {
        let bytes: [UInt8]
        do {
            bytes = try file.bytes()
        } catch {
            throw .cacheUnwritable(error)
        }
        let header: ImageHeader
        do {
            header = try ImageHeader.probe(bytes)
        } catch {
            switch error {
            case .notAnImage: throw .notAnImage(url: url, contentType: file.response.contentType)
            case .unsupported(let format): throw .unsupportedFormat(url: url, format)
            case .corrupt(let format, let reason):
                throw .corruptImage(url: url, reason: "corrupt \(format.displayName) image: \(reason)")
            case .libraryMissing(let message): throw .libraryMissing(message)
            }
        }
        if let missing = ImageHeader.missingEnd(of: bytes, format: header.format) {
            throw .corruptImage(url: url, reason: "truncated \(header.format.displayName) image: \(missing)")
        }
        guard settings.maximumPixels.allows(width: header.width, height: header.height) else {
            throw .tooManyPixels(url: url, width: header.width, height: header.height, limit: settings.maximumPixels)
        }
        if settings.verification == .full {
            // Every pixel of every frame, through the format's library.
            do {
                _ = try ImageDecoder.decode(bytes, maximumPixels: settings.maximumPixels)
            } catch {
                switch error {
                case .libraryMissing(let message): throw .libraryMissing(message)
                default: throw .notUsable(url: url, reason: error.description)
                }
            }
        }
        return (header, bytes)
    }

    private func announceThreads() {
        let hook = beforeFirstThread
        beforeFirstThread = nil
        hook?()
    }

    /// Lookup threads for prefetch: most lookups are system calls, which scale with cores.
    static let lookupThreads = max(2, min(4, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))))

    static func formatDelay(_ seconds: Double) -> String {
        let tenths = Int((seconds * 10).rounded())
        return "\(tenths / 10).\(tenths % 10) s"
    }
}

/// A URL that needs the network, and the inputs that asked for it.
private struct PendingFetch {
    /// The URL as given.
    let text: String
    let key: CacheKey
    let fingerprint: KeyFingerprint
    /// The entry being revalidated (RefreshCached), if any.
    let cached: CacheEntry?
    let firstIndex: Int
    /// Later inputs with the same key, answered with this one.
    var repeats: [(Int, String)] = []
    /// The failed list had a record for the key (expired, or ignored by RetryFailed).
    var hadFailedRecord = false

    init(text: String, key: CacheKey, fingerprint: KeyFingerprint, cached: CacheEntry?, firstIndex: Int) {
        self.text = text
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

/// What other threads tell the fetching thread.
enum FetchMessage: Sendable {
    case input([URLList.Item])
    case event(Int, DownloadEvent)
    case finished(Int, Result<DownloadedFile, DownloadError>)
    /// A lookup pool's answer for the request in a slot.
    case looked(Int, ImageFetcher.LookupOutcome)
    /// Something to look at (an interruption).
    case wake
}

/// Stops a run from another thread: no new work starts, transfers are
/// aborted (their temporary files removed), and what is left is answered
/// `interrupted`.
public final class FetchInterruption: Sendable {
    private let received = Atomic<Int32>(0)
    private let messages: BlockingQueue<FetchMessage>

    init(messages: BlockingQueue<FetchMessage>) {
        self.messages = messages
    }

    /// Asks the run to stop because of `signal`; later calls are ignored.
    public func interrupt(signal: Int32) {
        _ = received.compareExchange(expected: 0, desired: signal, ordering: .relaxed)
        messages.push(.wake)
    }

    /// The signal that interrupted the run, if any.
    public var signal: Int32? {
        let value = received.load(ordering: .relaxed)
        return value == 0 ? nil : value
    }
}

/// One URL for the lookup pool.
struct LookupJob: Sendable {
    let slot: Int
    let url: String
    let key: CacheKey
}

/// Threads that run lookups (the failed list, the cache, the read-only
/// folders) and post each outcome to the fetcher's messages.
final class LookupPool: Sendable {
    private let jobs = BlockingQueue<LookupJob?>()
    private let threads: [WorkerThread]

    init(threads count: Int, messages: BlockingQueue<FetchMessage>,
         lookUp: @escaping @Sendable (LookupJob, NamespaceLock.Handle) -> ImageFetcher.LookupOutcome) throws(SystemError) {
        var threads: [WorkerThread] = []
        let jobs = self.jobs
        for _ in 0..<count {
            let thread = WorkerThread()
            do {
                try thread.start {
                    let lockHandle = NamespaceLock.Handle()
                    while let job = jobs.pop() { messages.push(.looked(job.slot, lookUp(job, lockHandle))) }
                }
            } catch {
                for _ in threads { jobs.push(nil) }
                for started in threads { started.join() }
                throw error
            }
            threads.append(thread)
        }
        self.threads = threads
    }

    func submit(_ job: LookupJob) { jobs.push(job) }

    /// Ends the threads, dropping jobs not yet started.
    func stop() {
        while jobs.tryPop() != nil {}
        for _ in threads { jobs.push(nil) }
        for thread in threads { thread.join() }
    }
}
