#if canImport(Glibc)
import Glibc
#endif

/// How an answer reaches whoever asked: the failed list told, repeats answered
/// with the first, variants made first where they were asked for.
extension ImageFetcher {
    /// The failed-URL list follows each answer: lasting failures are remembered, successes forgotten.
    func remember(_ answer: Result<FetchResult, FetchError>, for miss: PendingFetch) {
        switch answer {
        case .failure(let error):
            // A refresh that failed keeps the entry, which answers later fetches: the list answers misses only.
            guard miss.cached == nil else { return }
            // A failure the next run tries again is kept too, never to refuse a request: an export says why the row has no image.
            let remembered = error.rememberedScope(request: request.fingerprint(for: miss.url))
            guard let scope = remembered ?? error.retriedScope else { return }
            do {
                try failedURLs.record(settings.failureKey(for: miss.url), url: miss.url, reason: error.recordedReason, scope: scope, now: WallClock.now())
                log?("\(RemoteURL.displayed(miss.url)): " + (remembered != nil ? "remembered as failed"
                                                               : "its failure noted for an export to say (the next run tries it again)"))
            } catch {
                log?("cannot remember the failure of \(RemoteURL.displayed(miss.url)): \(error)")
            }
        case .success:
            // Only when one may exist: the lookup saw it, or skipped looking (RetryFailed).
            if miss.hadFailedRecord || settings.options.contains(.retryFailed) { failedURLs.remove(settings.failureKey(for: miss.url)) }
        }
    }

    /// Answers the first request for a key and its repeats; an image whose variants are
    /// still to be made is answered once a worker has made them.
    /// Whether an SVG answered under `--keep-svg` is passed through as served: only an inert one;
    /// another gets its raster variants, and the run says why.
    private func passesThrough(_ original: FetchResult, url: String) -> Bool {
        guard let found = SVGActiveContent.activeContent(at: original.path) else { return true }
        // What it holds is said as found: content that would run or load, or markup a browser would read otherwise (or not show).
        warn?("\(RemoteURL.displayed(url)): not passed through as SVG (--keep-svg): it holds \(found); "
              + "its raster variants are made instead", nil)
        return false
    }

    func settle<E: Error>(_ fingerprint: KeyFingerprint, _ answer: Result<FetchResult, FetchError>, first: Int, url: String,
                                  repeats: [(Int, String)], _ run: inout FetchRun, emit: (FetchOutcome) throws(E) -> Void) throws(E) {
        // A full disk stops the downloads: the rest would be thrown away.
        if case .failure(.cacheUnwritable(let error)) = answer, error.errno == .noSpace || error.errno == Errno(EDQUOT) {
            reachFullDisk(&run, error)
        }
        // The image is stored (or failed): another process waiting for it may look it up now.
        if run.releaseDownloadLock(fingerprint), case .some(.some(let locks)) = downloadLocksMade { locks.unlock(fingerprint) }
        if run.heldTakeovers.remove(fingerprint) != nil, case .some(.some(let locks)) = downloadLocksMade { locks.endTakeOver(fingerprint) }
        if case .success(let original) = answer, original.variants.isEmpty, original.placeholder == nil,
           settings.makesVariants(of: original.metadata.format, inert: { passesThrough(original, url: url) }) {
            // Interrupted: no new work starts, so the variants asked for are not made.
            guard !run.interrupted else {
                if !original.isStored { try? FileSystem.remove(original.path) }
                try deliver(fingerprint, .failure(stopped(url, run)), first: first, url: url, repeats: repeats, &run, emit: emit)
                return
            }
            run.variants.add(original, fingerprint: fingerprint, first: first, url: url, repeats: repeats)
            try startVariants(&run, emit: emit)
            return
        }
        try deliver(fingerprint, answer, first: first, url: url, repeats: repeats, &run, emit: emit)
    }

    /// An image whose cached original another process removed before its variants were made:
    /// looked up again (and so downloaded again), as if it had just been asked for. False when
    /// it was three times already, or the run is stopping, or it was pinned (its pin is not at hand here).
    func lookUpAgain<E: Error>(_ held: VariantQueue.Pending, _ run: inout FetchRun,
                                       emit: (FetchOutcome) throws(E) -> Void) throws(E) -> Bool {
        let key = settings.cacheKey(for: held.url)
        guard !run.interrupted, KeyFingerprint(key, pin: nil) == held.fingerprint,
              run.lookedUpAgainForVariants[held.fingerprint, default: 0] < 3 else { return false }
        run.lookedUpAgainForVariants[held.fingerprint, default: 0] += 1
        log?("\(RemoteURL.displayed(held.url)): its cached original was removed before its variants were made; looked up again")
        var request = PendingFetch(url: held.url, key: key, fingerprint: held.fingerprint, cached: nil, firstIndex: held.first)
        request.repeats = held.repeats
        try proceed(lookup.run(held.url, key: key, ttl: failedTTL), request, &run, emit: emit)
        return true
    }

    /// Starts the variant jobs the workers and the memory budget allow; without threads, makes them here.
    func startVariants<E: Error>(_ run: inout FetchRun, emit: (FetchOutcome) throws(E) -> Void) throws(E) {
        let count = VariantWorkers.count(concurrency: downloaderConfiguration.maximumConcurrentDownloads)
        if variantWorkers == nil, !run.variants.waiting.isEmpty {
            announceThreads()
            do {
                variantWorkers = try VariantWorkers(count: count, cache: cache, settings: settings, logs: log != nil, messages: messages)
            } catch {
                log?("cannot start the variant threads (\(error)); making variants on this one")
            }
        }
        for job in run.variants.startable(workers: count, budget: settings.decodeLimits.memory) {
            if let variantWorkers {
                variantWorkers.submit(job)
            } else {
                messages.push(.variantsMade(token: job.token, variantMaker.answer(for: job.original, held: job.held), log: []))
            }
        }
    }

    /// Answers the first request for a key and its repeats, now.
    func deliver<E: Error>(_ fingerprint: KeyFingerprint, _ answer: Result<FetchResult, FetchError>, first: Int, url: String,
                                   repeats: [(Int, String)], _ run: inout FetchRun, emit: (FetchOutcome) throws(E) -> Void) throws(E) {
        switch run.repeats {
        case .answeredFromMemory:
            run.seen.insert(fingerprint)
            run.answers[fingerprint] = answer
        // The list's reader already skips a prefetch's repeats (`ListLookup`): a second set of keys would
        // only double what each distinct URL costs in memory.
        case .skipped: break
        case .lookedUpAgain: run.recentlySettled.add(fingerprint)
        }
        try emit(FetchOutcome(index: first, url: url, result: answer))
        run.answered += 1
        for (index, repeatURL) in repeats {
            try emit(FetchOutcome(index: index, url: repeatURL, result: run.repeats == .skipped ? nil : Self.fromMemory(answer, url: repeatURL)))
            run.answered += 1
        }
    }

    static func fromMemory(_ answer: Result<FetchResult, FetchError>, url: String) -> Result<FetchResult, FetchError> {
        answer.map { $0.fromMemory(url: url) }
    }
}
