#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Answers "give me these images" (SDWebImageManager's loadImage flow): for
/// each URL, the cache, then the failed-URL list, then a download (all misses
/// through one downloader, coalesced), a check of the bytes, an atomic store,
/// and the answer with where it came from.
///
/// One loop on the calling thread takes every message (a list's looked-up
/// URLs, download events and completions, wake-ups) and decides; `Lookup`
/// looks one URL up, `ListLookup` does it for a list on its reader thread,
/// `DownloadStore` checks and stores what the downloader brings. The download
/// thread only moves bytes. `fetch` answers in the order of its URLs;
/// `prefetch` streams a list of any length in bounded memory.
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
    /// announced length, at most ten times a second per download; nil: none sent.
    public var progress: ((String, Int64, Int64?) -> Void)?
    /// Lets another thread (a signal watcher) stop the run.
    public let interruption: FetchInterruption
    /// Called on the calling thread with a problem worth saying even without
    /// -v (a remote store given up), and the transfer failure behind it when
    /// there is one; nil when nobody listens.
    public var warn: ((String, DownloadError?) -> Void)?
    /// What the remote stores did in the run.
    public var remoteStatistics: RemoteStatistics { remoteTier?.statistics ?? RemoteStatistics() }
    /// Called once, on the calling thread, before the run starts a thread of
    /// its own (the first download, or a prefetch): where to start a signal
    /// watcher, which must see no other threads yet. A run of hits never calls it.
    public var beforeFirstThread: (() -> Void)?
    /// Called once, before the first download (a hit never calls it): why a file the
    /// requests need cannot be used (certificate authorities, netrc, cookie jar), and the
    /// status to end with; nil when all can. Every download then fails with it.
    public var checkRequestFiles: (() -> (message: String, status: ExitStatus)?)?

    let failedURLs: FailedURLStore
    /// What the run's requests carry beyond the URL (the failed list's records answer only requests like them).
    let request: RequestIdentity
    /// Read from the namespace only when a failure record is found.
    var resolvedFailedTTL: AgeLimit?
    /// Created on the first miss, so a hit never loads libcurl.
    var downloader: (any DownloadScheduling)?
    /// The remote stores, made with the downloader.
    var remoteTier: RemoteTier?
    /// The threads that make variants, started with the first image that needs them.
    var variantWorkers: VariantWorkers?
    /// Where credentials for remote stores are read.
    let environment: Environment
    /// Makes the downloader (a scripted one in tests).
    let makeDownloader: (DownloadConfiguration) throws(DownloadError) -> any DownloadScheduling
    var downloaderFailure: FetchError?
    let messages: BlockingQueue<FetchMessage>
    /// The namespace folder and its lock file were made (or found) once.
    var storesPrepared = false
    /// The locks that keep two processes from downloading one key at once: made
    /// with the first download (the inner nil: the cache cannot take them).
    var downloadLocksMade: DownloadLocks??
    /// Messages of a run may outlive it (answers in flight when it threw), so
    /// one fetcher serves one run.
    private(set) var hasRun = false
    /// Whether the run's deadline (`--deadline`) came before its work was done.
    public internal(set) var reachedDeadline = false
    /// The lock file, kept open for the lookups and stores of this (the calling) thread.
    let lockHandle = NamespaceLock.Handle()
    /// This (the calling) thread's decode worker, for `--verify full` and variants made here; its
    /// process starts with the first job, so a run that decodes nothing starts none.
    let decoder: DecodeWorkerProcess

    /// `makeDownloader` gives the downloader the first miss needs: by default
    /// a `Downloader` on libcurl.
    public init(cache: DiskCache, readOnlyCaches: [ReadOnlyCache] = [], settings: FetchSettings = FetchSettings(),
                downloaderConfiguration: DownloadConfiguration = DownloadConfiguration(),
                environment: Environment = .process,
                makeDownloader: @escaping (DownloadConfiguration) throws(DownloadError) -> any DownloadScheduling
                    = { (configuration) throws(DownloadError) in try Downloader(configuration: configuration) }) {
        self.makeDownloader = makeDownloader
        self.environment = environment
        self.cache = cache
        self.readOnlyCaches = readOnlyCaches
        var settings = settings
        let credentialKey = settings.credentialKey ?? CredentialKey(cache: cache)
        settings.credentialKey = credentialKey
        self.settings = settings
        self.downloaderConfiguration = downloaderConfiguration
        failedURLs = FailedURLStore(namespaceDirectory: cache.directory, listings: cache.listings)
        request = RequestIdentity(settings: settings, downloads: downloaderConfiguration, key: credentialKey)
        messages = BlockingQueue()
        interruption = FetchInterruption(messages: messages)
        decoder = DecodeWorkerProcess(limits: settings.decodeLimits)
    }

    /// Fetches `urls`, handing each answer to `deliver` in the order of `urls`,
    /// each as soon as it and all before it are known. A URL given again is
    /// fetched once and answered again from memory (cache type `memory`). An
    /// error thrown by `deliver` stops the run and is rethrown.
    public func fetch<E: Error>(_ urls: [String], deliver: (Int, Result<FetchResult, FetchError>) throws(E) -> Void) throws(E) {
        precondition(!hasRun, "an ImageFetcher runs once")
        var answers = ReorderBuffer<Result<FetchResult, FetchError>>()
        var run = FetchRun(repeats: .answeredFromMemory, list: nil)
        try self.run(&run, input: urls.map { .url($0, line: 0) } + [.end], emit: { (outcome: FetchOutcome) throws(E) in
            guard let result = outcome.result else { return }
            answers.insert(result, at: outcome.index)
            try answers.drain { (index, ready) throws(E) in
                defer { if case .success(let result) = ready { for path in result.handedOverPaths { try? FileSystem.remove(path) } } }
                try deliver(index, ready)
            }
        }, update: { (_: PrefetchUpdate) throws(E) in })
    }

    /// Adds a run's counts to the namespace's statistics (once, as the run
    /// ends), through the lock file the run's lookups kept open.
    public func appendStatistics(_ statistics: UsageStatistics) {
        StatisticsLog(namespaceDirectory: cache.directory).append(statistics, using: lockHandle)
    }

    /// Stops transfers still running, writes the cookie jar and ends the download
    /// thread. Bodies that finished after a run stopped early (its delivery
    /// threw) are removed.
    public func close() {
        downloader?.close()
        remoteTier?.close()
        variantWorkers?.close(waiting: interruption.signal == nil)
        decoder.close()
        while let message = messages.tryPop() {
            if case .finished(_, .success(let file)) = message, let spilled = file.spilledPath { try? FileSystem.remove(spilled) }
        }
    }

    // MARK: - The run

    /// Takes `input` (URLs given at once), then handles messages until the
    /// input has ended (or the run was interrupted) and no fetch is left in
    /// flight; answers go to `emit`.
    func run<E: Error>(_ run: inout FetchRun, input: [URLList.Item] = [], emit: (FetchOutcome) throws(E) -> Void,
                       update emitUpdate: (PrefetchUpdate) throws(E) -> Void) throws(E) {
        do throws(E) {
            defer { hasRun = true }
            // A secret's file found unusable (planted, damaged) is said once, as the run ends.
            defer { if let problem = settings.credentialKey?.takeProblem() { warn?(problem, nil) } }
            if let seconds = settings.deadline { run.deadline = WallClock.monotonic() + seconds }
            try take(input, &run, emit: emit, update: emitUpdate)
            submitQueued(&run)
            while run.hasWork {
                // The reader gets the credits of what was answered, on every way round the loop: a
                // pass that answers only waits for other processes' downloads (and `continue`s) must
                // give them back too, or a reader out of credits and a loop with nothing in flight
                // would wait for each other for ever.
                releaseAnswered(&run)
                if interruption.signal != nil { stopForSignal(&run) }
                if let deadline = run.deadline, !run.interrupted, WallClock.monotonic() >= deadline { reachDeadline(&run) }
                if run.interrupted, !run.lockWaits.isEmpty {
                    for wait in run.lockWaits {
                        downloadLocks()?.stopWaiting(wait.request.fingerprint)
                        try settle(wait.request.fingerprint, .failure(stopped(wait.request.url, run)), first: wait.request.firstIndex,
                                   url: wait.request.url, repeats: wait.request.repeats, &run, emit: emit)
                    }
                    run.lockWaits.removeAll()
                }
                if run.interrupted, run.hasDeferredDownloads { try abandonDeferredDownloads(&run, emit: emit) }
                if run.interrupted, remoteTier != nil { try abandonRemoteLookups(&run, emit: emit) }
                try resumeDeferredDownloads(&run, emit: emit)
                // Those another process is done with go on (maybe answered at once): the loop's condition is checked again.
                if try retryLockWaits(&run, emit: emit) {
                    submitQueued(&run)
                    continue
                }
                if run.interrupted, !run.variants.isEmpty {
                    try abandonVariants(&run, emit: emit)
                    continue
                }
                if run.interrupted, run.inFlight.isEmpty, run.list != nil, !run.inputOpen {
                    // URLs already read are answered `interrupted`, so the summary counts them.
                    while let message = messages.tryPop() { try handle(message, &run, emit: emit, update: emitUpdate) }
                    if run.pendingWrites == 0 { break }
                }
                if run.interrupted, interruption.isHurried {
                    try abandonWaiting(&run, emit: emit, update: emitUpdate)
                    break
                }
                var wait: Double? = run.wantsIdle ? 0.25 : nil
                // Another process's download is polled for: its lock cannot wake this loop.
                if !run.lockWaits.isEmpty { wait = min(wait ?? ImageFetcher.lockPollInterval, ImageFetcher.lockPollInterval) }
                // Woken for the deadline, however quiet the network.
                if let deadline = run.deadline, !run.interrupted { wait = min(wait ?? .infinity, max(0.001, deadline - WallClock.monotonic())) }
                if run.interrupted, run.pendingWrites > 0, run.inFlight.isEmpty, run.variants.isEmpty {
                    let left = awaitWrites(&run)
                    if left <= 0 { continue }
                    wait = min(wait ?? left, left)
                }
                // What this pass answered may have been the last work (waits for other processes
                // settled at the deadline): no message would come to wake a wait for one.
                guard run.hasWork else { break }
                let first: FetchMessage
                if let wait {
                    guard let message = messages.pop(timeout: wait) else {
                        if run.wantsIdle, run.lockWaits.isEmpty { try emitUpdate(.idle) }
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
                    if interruption.signal != nil { stopForSignal(&run) }
                    message = handled < 4096 ? messages.tryPop() : nil
                }
                try resumeDeferredDownloads(&run, emit: emit)
                submitQueued(&run)
                releaseAnswered(&run)
            }
        } catch {
            downloader?.cancelAll()
            throw error
        }
    }

    /// Gives the list's reader the credits of the URLs answered since the last call.
    private func releaseAnswered(_ run: inout FetchRun) {
        if run.releasesOnAnswer, run.answered > 0 { run.list?.release(run.answered) }
        run.answered = 0
    }

    func submitQueued(_ run: inout FetchRun) {
        guard !run.submissions.isEmpty else { return }
        let batch = run.submissions
        run.submissions.removeAll()
        downloader?.submit(batch)
    }

    func handle<E: Error>(_ message: FetchMessage, _ run: inout FetchRun,
                                  emit: (FetchOutcome) throws(E) -> Void,
                                  update emitUpdate: (PrefetchUpdate) throws(E) -> Void) throws(E) {
        switch message {
        case .wake:
            break
        case .event(let slot, .retrying(let attempt, let total, let delay, let error)):
            guard let miss = run.inFlight[slot] else { return }
            log?("retry \(attempt) of \(total) in \(Self.formatDelay(delay)) for \(RemoteURL.displayed(miss.url)): \(error.reason)")
        case .event(_, .started):
            break
        case .event(let slot, .progress(let received, let expected)):
            guard let miss = run.inFlight[slot] else { return }
            progress?(miss.url, received, expected)
        case .looked(let items):
            for item in items {
                if interruption.signal != nil { stopForSignal(&run) }
                try handle(item, &run, emit: emit, update: emitUpdate)
            }
        case .finished(let slot, let result):
            guard let miss = run.inFlight.remove(slot) else { return }
            if case .success(let body) = result { remoteTier?.timeOriginDownload(seconds: body.response.elapsed) }
            var stored: EntryCommitter.Body?
            let answer = run.interrupted && Self.isCancellation(result)
                ? .failure(stopped(miss.url, run)) : downloadStore.store(result, for: miss, stored: &stored)
            miss.heartbeat?.end()
            remember(answer, for: miss)
            if let stored, case .success(let fetched) = answer { share(stored, of: miss.key, as: fetched, &run) }
            try settle(miss.fingerprint, answer, first: miss.firstIndex, url: miss.url, repeats: miss.repeats, &run, emit: emit)
        case .remote(let slot, let store, let result, let seconds):
            try remoteAnswered(slot: slot, store: store, result, seconds: seconds, &run, emit: emit)
        case .remoteWritten(let store, let result, let seconds):
            remoteWritten(store, result, seconds: seconds, &run)
        case .variantsMade(let token, let answer, let lines):
            for line in lines { log?(line) }
            guard let held = run.variants.finish(token, started: true) else { return }
            if case .failure(.notUsable(_, VariantMaker.originalWentAway)) = answer, try lookUpAgain(held, &run, emit: emit) {
                try startVariants(&run, emit: emit)
                return
            }
            try deliver(held.fingerprint, answer, first: held.first, url: held.url, repeats: held.repeats, &run, emit: emit)
            try startVariants(&run, emit: emit)
        }
        if run.interrupted, !run.variants.isEmpty { try abandonVariants(&run, emit: emit) }
    }

    /// URLs given at once, in their order.
    private func take<E: Error>(_ items: [URLList.Item], _ run: inout FetchRun, emit: (FetchOutcome) throws(E) -> Void,
                                update emitUpdate: (PrefetchUpdate) throws(E) -> Void) throws(E) {
        for item in items {
            if interruption.signal != nil { stopForSignal(&run) }
            try handle(item, &run, emit: emit, update: emitUpdate)
        }
    }

    /// The next answer's index, for `url`; nil once the run is interrupted,
    /// after answering `url` so.
    private func nextIndex<E: Error>(for url: String, _ run: inout FetchRun,
                                     emit: (FetchOutcome) throws(E) -> Void) throws(E) -> Int? {
        let index = run.nextIndex
        run.nextIndex += 1
        // Past the deadline a URL is still looked up: a hit is answered, only a miss is not done.
        guard run.interrupted, !run.stoppedEarly else { return index }
        try emit(FetchOutcome(index: index, url: url, result: .failure(stopped(url, run))))
        run.answered += 1
        return nil
    }

    private func handle<E: Error>(_ item: URLList.Item, _ run: inout FetchRun,
                                  emit: (FetchOutcome) throws(E) -> Void,
                                  update emitUpdate: (PrefetchUpdate) throws(E) -> Void) throws(E) {
        switch item {
        case .url(let url, _):
            guard let index = try nextIndex(for: url, &run, emit: emit) else { return }
            try begin(url, index: index, &run, emit: emit)
        case .rejected(let text, let line, let reason):
            let index = run.nextIndex
            run.nextIndex += 1
            if let shard = settings.shard, !shard.contains(line: line) {
                try emit(FetchOutcome(index: index, url: text, result: nil, otherShard: true))
            } else {
                try emit(FetchOutcome(index: index, url: text, result: .failure(.invalidURL(url: text, reason: reason))))
            }
            run.answered += 1
        case .badRow(let line, let reason):
            let index = run.nextIndex
            run.nextIndex += 1
            if let shard = settings.shard, !shard.contains(line: line) {
                try emit(FetchOutcome(index: index, url: "", result: nil, otherShard: true))
            } else {
                try emit(FetchOutcome(index: index, url: "", result: .failure(.badRow(line: line, reason: reason))))
            }
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

    private func handle<E: Error>(_ item: ListLookup.Item, _ run: inout FetchRun,
                                  emit: (FetchOutcome) throws(E) -> Void,
                                  update emitUpdate: (PrefetchUpdate) throws(E) -> Void) throws(E) {
        switch item {
        case .other(let other):
            try handle(other, &run, emit: emit, update: emitUpdate)
        case .repeated(let url):
            // prefetch keeps nothing per repeat: it is answered now, whatever the first one becomes.
            try emit(FetchOutcome(index: run.nextIndex, url: url, result: nil))
            run.nextIndex += 1
            run.answered += 1
        case .elsewhere(let url):
            try emit(FetchOutcome(index: run.nextIndex, url: url, result: nil, otherShard: true))
            run.nextIndex += 1
            run.answered += 1
        case .unlooked(let url, let key, let fingerprint, let pin):
            try handle(.looked(url: url, key: key, fingerprint: fingerprint,
                               outcome: lookup.run(url, key: key, ttl: failedTTL), pin: pin),
                       &run, emit: emit, update: emitUpdate)
        case .looked(let url, let key, let fingerprint, let outcome, let pin):
            guard let index = try nextIndex(for: url, &run, emit: emit) else { return }
            // The same key in flight (looked up before its download ended), or its variants being made: answered with it.
            if run.inFlight.join(fingerprint, index: index, url: url) || run.joinDeferred(fingerprint, index: index, url: url)
                || run.variants.join(fingerprint, index: index, url: url) { return }
            // A plain hit (no pin, no variants, nothing to forget or share) is delivered as it is:
            // what `proceed` and `settle` would do for it comes to `deliver` alone.
            if case .answer(.success(let hit), let note) = outcome, note == nil, pin == nil, settings.variants.isEmpty,
               !settings.options.contains(.retryFailed), !settings.remoteReshare {
                try deliver(fingerprint, .success(hit), first: index, url: url, repeats: [], &run, emit: emit)
                return
            }
            var outcome = outcome
            if case .download = outcome, run.recentlySettled.contains(fingerprint) {
                // Looked up before the same key's answer was stored: looked up again, now.
                outcome = lookup.run(url, key: key, ttl: failedTTL)
            }
            try proceed(outcome, PendingFetch(url: url, key: key, fingerprint: fingerprint, cached: nil, firstIndex: index, pin: pin),
                        &run, emit: emit)
        }
    }

    /// One input URL: answered at once (a repeat, the failed list, a hit, a
    /// refusal) or queued for download.
    private func begin<E: Error>(_ given: String, index: Int, _ run: inout FetchRun, emit: (FetchOutcome) throws(E) -> Void) throws(E) {
        let pin: BytePin?
        do throws(ValueError) { pin = try BytePin.parse(given) } catch {
            try emit(FetchOutcome(index: index, url: given, result: .failure(.invalidURL(url: given, reason: error.reason))))
            run.answered += 1
            return
        }
        // A fragment never reaches a server, so it is no part of the request or the key.
        let url = URLText.withoutFragment(given)
        let key = settings.cacheKey(for: url)
        let fingerprint = KeyFingerprint(key, pin: pin)
        if run.inFlight.contains(fingerprint) || run.variants.contains(fingerprint) || run.lockDeferred.contains(fingerprint) {
            if run.repeats != .skipped {
                if !run.inFlight.join(fingerprint, index: index, url: url), !run.joinDeferred(fingerprint, index: index, url: url) {
                    _ = run.variants.join(fingerprint, index: index, url: url)
                }
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
        let outcome = lookup.run(url, key: key, ttl: failedTTL)
        try proceed(outcome, PendingFetch(url: url, key: key, fingerprint: fingerprint, cached: nil, firstIndex: index, pin: pin),
                    &run, emit: emit)
    }

    /// The cache, the read-only folders and the failed list, for one URL.
    var lookup: Lookup {
        Lookup(wantsNotes: log != nil, settings: settings, cache: cache, readOnlyCaches: readOnlyCaches, failedURLs: failedURLs,
               request: request)
    }

    /// Every variant of `url` asked for, when all are cached (from whatever original).
    func storedVariants(of url: String) -> [FetchResult.Variant]? {
        VariantLookup(cache: cache, settings: settings).all(of: url, madeFrom: nil, now: WallClock.now())
    }

    /// Makes an image's variants from the original.
    var variantMaker: VariantMaker { VariantMaker(cache: cache, settings: settings, log: log, lockHandle: lockHandle, decoder: decoder) }

    /// Checks and stores downloads.
    var downloadStore: DownloadStore {
        DownloadStore(cache: cache, settings: settings, log: log, lockHandle: lockHandle, decoder: decoder)
    }
}

extension ImageFetcher {
    func announceThreads() {
        let hook = beforeFirstThread
        beforeFirstThread = nil
        hook?()
    }

    static func formatDelay(_ seconds: Double) -> String {
        let tenths = Int((seconds * 10).rounded())
        return "\(tenths / 10).\(tenths % 10) s"
    }
}
