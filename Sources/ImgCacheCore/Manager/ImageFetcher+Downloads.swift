#if canImport(Glibc)
import Glibc
#endif

/// How the manager turns a lookup into an answer or a download: the
/// downloader (made on the first miss), the folder a large body goes to, and
/// the failed TTL that lookups use.
extension ImageFetcher {
    /// Acts on a lookup's outcome for `request`: answers it, or puts it in
    /// flight (a remote store asked, or its download queued).
    func proceed<E: Error>(_ outcome: LookupOutcome, _ request: PendingFetch, _ run: inout FetchRun,
                           emit: (FetchOutcome) throws(E) -> Void) throws(E) {
        func answer(_ result: Result<FetchResult, FetchError>) throws(E) {
            try settle(request.fingerprint, result, first: request.firstIndex, url: request.url, repeats: request.repeats, &run, emit: emit)
        }
        let remote: RemoteURL, cached: CacheEntry?, failedBefore: Bool, stamp: ShardListings.Stamp?
        var outcome = outcome
        if let pin = request.pin, case .answer(.success(let hit), _) = outcome, let (other, found) = mismatch(hit, pin: pin) {
            // A pinned request is never answered with other bytes: downloaded as if missing, unless
            // nothing may be downloaded (--cache-only, export).
            if settings.options.contains(.fromCacheOnly) {
                let failure: FetchError = found.map { .pinMismatch(url: request.url, expected: pin.sha256, found: $0, inCache: true) }
                    ?? .notUsable(url: request.url, reason: other)
                outcome = .answer(.failure(failure), note: nil)
            } else if let url = try? RemoteURL(parsing: request.url) {
                log?("\(RemoteURL.displayed(request.url)): \(other); downloaded again")
                outcome = .download(url, cached: nil, note: nil, failedBefore: false, stamp: nil)
            }
        }
        switch outcome {
        case .answer(let result, let note):
            if let note { log?(note) }
            // A success under RetryFailed takes the URL off the list, a cached one too.
            if case .success = result, settings.options.contains(.retryFailed) { failedURLs.remove(settings.failureKey(for: request.url)) }
            // Only the image as served is shared (an answer made of variants found alone has none at hand).
            if settings.remoteReshare, case .success(let hit) = result, hit.cacheType == .disk, hit.variants.isEmpty {
                reshare(hit, key: request.key, &run)
            }
            try answer(result)
            return
        case .refused(let failure):
            try answer(.failure(failure))
            return
        case .download(let url, let entry, let note, let failed, let seen):
            if let note { log?(note) }
            (remote, cached, failedBefore, stamp) = (url, entry, failed, seen)
        }
        if run.interrupted {
            try answer(.failure(stopped(request.url, run)))
            return
        }
        // Another process downloading the same key: waited for, then looked up again.
        // (The namespace and its lock file are made first; a failure to, said below.)
        if !request.unguarded, !settings.options.contains(.cacheMemoryOnly), !run.heldDownloadLocks.contains(request.fingerprint),
           let folder = try? bodyDirectory(for: request.key), let locks = downloadLocks() {
            // Locked only when its download can start soon (see `FetchRun.lockDeferred`).
            let server = lockServer(of: remote)
            guard mayLock(server: server, run) else {
                run.deferDownload(outcome, request, server: server ?? "")
                return
            }
            guard locks.tryLock(request.fingerprint) else {
                log?("\(RemoteURL.displayed(request.url)): being downloaded by another process; waiting for it")
                locks.startWaiting(request.fingerprint)
                run.lockWaits.append(LockWait(request: request, since: WallClock.monotonic(), folder: folder))
                return
            }
            run.holdDownloadLock(request.fingerprint, server: server)
            // Looked up before the lock was taken: another process may have stored it (or recorded
            // its failure) since. Looked up again only then: when the shard's and the failures'
            // generations moved (read from memory), else when another process holds a download lock.
            if stamp.map(cache.listings.changed(since:)) ?? locks.othersAreDownloading() {
                let fresh = lookup.run(request.url, key: request.key, ttl: failedTTL)
                if case .answer = fresh {
                    log?("\(RemoteURL.displayed(request.url)): stored by another process meanwhile")
                    return try proceed(fresh, request, &run, emit: emit)
                }
            }
        }
        var miss = PendingFetch(url: request.url, key: request.key, fingerprint: request.fingerprint,
                                cached: cached, firstIndex: request.firstIndex, pin: request.pin)
        miss.repeats = request.repeats
        miss.hadFailedRecord = failedBefore
        miss.origin = remote
        if cached == nil, settings.options.contains(.refreshCached), !settings.variants.isEmpty {
            miss.keptVariants = storedVariants(of: request.url)
        }
        do throws(FetchError) {
            _ = try startDownloader()
            // Made (or found writable) before any traffic, remote or origin.
            _ = try bodyDirectory(for: request.key)
            let slot = run.inFlight.add(miss)
            // The remote stores answer misses; a refresh, FromLoaderOnly and CacheMemoryOnly go to the origin.
            if cached == nil, miss.keptVariants == nil, settings.options.isDisjoint(with: [.fromLoaderOnly, .cacheMemoryOnly]),
               let store = remoteTier?.readable(after: nil) {
                askRemote(store, slot: slot, &run)
            } else {
                try submitOrigin(slot, &run)
            }
        } catch {
            try settle(request.fingerprint, .failure(error), first: request.firstIndex, url: request.url, repeats: request.repeats, &run, emit: emit)
        }
    }

    /// How often a key another process is downloading is checked.
    static let lockPollInterval = 0.02

    /// How many download locks a run holds at most: four times its transfers, so that
    /// finished transfers always have locked ones queued behind them.
    var downloadLocksAhead: Int { 4 * max(1, downloaderConfiguration.maximumConcurrentDownloads) + 4 }

    /// Whether the run counts its locks by server: with `--per-host` or `--rate` a server's
    /// URLs wait their turn, and while they wait they must not hold the locks other servers'
    /// URLs could use. Then each server holds at most four times its transfers' worth, and
    /// the run four times `downloadLocksAhead` in all.
    var countsLocksByServer: Bool {
        downloaderConfiguration.perHostConcurrency != nil || downloaderConfiguration.perHostRate != nil
    }

    /// The server `url`'s lock counts against, when locks are counted by server.
    func lockServer(of url: String) -> String? {
        guard countsLocksByServer else { return nil }
        return (try? RemoteURL(parsing: url))?.server ?? ""
    }

    /// `lockServer(of:)` of a URL parsed already.
    func lockServer(of url: RemoteURL) -> String? {
        countsLocksByServer ? url.server : nil
    }

    /// Whether a lock can be taken for a download from `server` now.
    func mayLock(server: String?, _ run: FetchRun) -> Bool {
        mayLock(server: server, held: run.heldDownloadLocks.count, byServer: run.heldLocksByServer)
    }

    /// `mayLock` with the run's counts given: `held` locks, `byServer` of them by server.
    func mayLock(server: String?, held: Int, byServer: [String: Int]) -> Bool {
        guard let server else { return held < downloadLocksAhead }
        let transfers = min(max(1, downloaderConfiguration.maximumConcurrentDownloads),
                            downloaderConfiguration.perHostConcurrency ?? 1)
        return held < 4 * downloadLocksAhead && byServer[server, default: 0] < 4 * transfers + 4
    }

    /// Takes up the deferred misses once the run holds a transfer's worth of download
    /// locks fewer than it can use, up to that limit: submitted together, so that the
    /// download thread is woken once for several.
    func resumeDeferredDownloads<E: Error>(_ run: inout FetchRun, emit: (FetchOutcome) throws(E) -> Void) throws(E) {
        let batch = max(1, downloaderConfiguration.maximumConcurrentDownloads)
        guard run.hasDeferredDownloads else { return }
        guard countsLocksByServer else {
            guard run.heldDownloadLocks.count <= downloadLocksAhead - batch else { return }
            while run.heldDownloadLocks.count < downloadLocksAhead, !run.interrupted, let next = run.nextDeferredDownload() {
                try proceed(next.outcome, next.request, &run, emit: emit)
            }
            return
        }
        // By server: the first deferred miss (in the list's order) of a server with room.
        while !run.interrupted {
            let held = run.heldDownloadLocks.count, byServer = run.heldLocksByServer
            guard let next = run.nextDeferredDownload(where: { mayLock(server: $0, held: held, byServer: byServer) }) else { break }
            try proceed(next.outcome, next.request, &run, emit: emit)
        }
    }

    /// Answers the deferred misses as stopped (an interrupted run, or its deadline).
    func abandonDeferredDownloads<E: Error>(_ run: inout FetchRun, emit: (FetchOutcome) throws(E) -> Void) throws(E) {
        while let deferred = run.nextDeferredDownload() {
            let request = deferred.request
            try settle(request.fingerprint, .failure(stopped(request.url, run)), first: request.firstIndex,
                       url: request.url, repeats: request.repeats, &run, emit: emit)
        }
    }

    /// The cross-process download locks, opened with the first download.
    func downloadLocks() -> DownloadLocks? {
        if let made = downloadLocksMade { return made }
        let made = DownloadLocks(namespace: NamespaceLock(namespaceDirectory: cache.directory))
        downloadLocksMade = .some(made)
        return made
    }

    /// The misses another process was downloading: those it is done with are looked up
    /// again (its image is in the cache now, or its failure on the failed list), and
    /// downloaded here if it is not. One whose download showed no progress for the
    /// download timeout (no heartbeat: stalled, or stopped) is downloaded here too,
    /// unguarded; a slow one that keeps receiving is waited for. Whether any went on.
    func retryLockWaits<E: Error>(_ run: inout FetchRun, emit: (FetchOutcome) throws(E) -> Void) throws(E) -> Bool {
        guard !run.lockWaits.isEmpty, let locks = downloadLocks() else { return false }
        let waiting = run.lockWaits.count
        let now = WallClock.monotonic()
        let waits = run.lockWaits
        run.lockWaits.removeAll()
        let patience = max(settings.timeout, 1)
        for var wait in waits {
            var request = wait.request
            // -m bounds the whole request, as curl's does: the wait for another process's download
            // of it included (waiters on a stalled URL would otherwise each add their own).
            let locked = locks.tryLock(request.fingerprint)
            if !locked, let limit = settings.maximumTime, now - wait.since >= limit {
                locks.stopWaiting(request.fingerprint)
                try settle(request.fingerprint, .failure(.download(url: request.url, .maximumTimeExceeded(seconds: limit))),
                           first: request.firstIndex, url: request.url, repeats: request.repeats, &run, emit: emit)
                continue
            }
            if locked {
                run.holdDownloadLock(request.fingerprint, server: lockServer(of: request.url))
            } else if now - wait.lastProgress < patience {
                run.lockWaits.append(wait)
                continue
            } else if let beat = DownloadLocks.lastHeartbeat(of: request.key, in: wait.folder), WallClock.now() - beat < patience {
                // The other transfer is receiving: waited for as long as it does (looked at again a timeout later at most).
                wait.lastProgress = now - (WallClock.now() - beat)
                run.lockWaits.append(wait)
                continue
            } else if locks.tryTakeOver(request.fingerprint) {
                log?("\(RemoteURL.displayed(request.url)): still being downloaded by another process, with no progress for "
                     + "\(DownloadError.formatSeconds(patience)); downloading it here too")
                run.heldTakeovers.insert(request.fingerprint)
                request.unguarded = true
            } else {
                // Another waiter took it over: waited for as the holder is (its heartbeat shows its progress).
                wait.lastProgress = now
                run.lockWaits.append(wait)
                continue
            }
            locks.stopWaiting(request.fingerprint)
            let outcome = lookup.run(request.url, key: request.key, ttl: failedTTL)
            if case .answer = outcome { log?("\(RemoteURL.displayed(request.url)): answered by the other process's download") }
            try proceed(outcome, request, &run, emit: emit)
        }
        return run.lockWaits.count < waiting
    }

    /// Why a cached answer is not the pinned bytes (nil when it is): the image as served must
    /// be at hand and hash to the pin; variants found without it are not taken.
    /// `found`: the cached bytes' digest, when they could be read.
    private func mismatch(_ hit: FetchResult, pin: BytePin) -> (reason: String, found: String?)? {
        guard let original = hit.variants.isEmpty ? hit.path : hit.originalPath else {
            return ("its original is not cached to check the sha256 pin", nil)
        }
        do {
            guard let found = try pin.check(file: original) else { return nil }
            return ("the cached bytes' sha256 is \(found), not the pinned \(pin.sha256)", found)
        } catch {
            return ("the cached bytes cannot be checked (\(error.reason))", nil)
        }
    }

    /// Queues the origin download of the request in `slot`.
    func submitOrigin(_ slot: Int, _ run: inout FetchRun) throws(FetchError) {
        guard let miss = run.inFlight[slot], let origin = miss.origin else { return }
        run.inFlight[slot]?.remoteStore = nil
        let bodyDirectory = try bodyDirectory(for: miss.key)
        log?("download: \(RemoteURL.displayed(miss.url))" + (miss.validators != nil ? " (conditional)" : ""))
        let downloadRequest = settings.request(for: origin, bodyDirectory: bodyDirectory, validators: miss.validators)
        let messages = self.messages
        // Progress costs a message ten times a second per transfer: only for a listener.
        let wantsProgress = progress != nil
        // A download whose lock this process holds shows its progress to the processes waiting for it.
        let heartbeat = run.heldDownloadLocks.contains(miss.fingerprint) || run.heldTakeovers.contains(miss.fingerprint)
            ? downloadLocks()?.heartbeat(for: miss.fingerprint, key: miss.key, folder: bodyDirectory) : nil
        run.inFlight[slot]?.heartbeat = heartbeat
        run.submissions.append(DownloadSubmission(
            request: downloadRequest, priority: settings.priority,
            onEvent: { event in
                if case .progress = event {
                    heartbeat?.beat()
                    if !wantsProgress { return }
                }
                if case .started = event { return }
                messages.push(.event(slot, event))
            },
            completion: { result in messages.push(.finished(slot, result)) }))
    }

    /// The folder a body too large for memory goes to: its entry's shard, so
    /// that storing it is a rename within one folder (made when first needed);
    /// with CacheMemoryOnly the system's temporary folder, so the cache is not
    /// written. The namespace and its lock file are made once, before the first
    /// download, so that a cache that cannot be written fails before any traffic.
    func bodyDirectory(for key: CacheKey) throws(FetchError) -> String {
        if settings.options.contains(.cacheMemoryOnly) { return EntryCommitter.memoryOnlyDirectory }
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

    func failedTTL() -> AgeLimit {
        if let resolvedFailedTTL { return resolvedFailedTTL }
        let ttl = settings.failedTTL ?? cache.settings.failedTTL ?? FailedURLStore.defaultTTL
        resolvedFailedTTL = ttl
        return ttl
    }

    /// The downloader, started on the first miss; an unwritable cache or a
    /// missing libcurl fails every miss before any traffic.
    func startDownloader() throws(FetchError) -> any DownloadScheduling {
        if let downloader { return downloader }
        if let downloaderFailure { throw downloaderFailure }
        if let (message, status) = checkRequestFiles?() {
            let failure = FetchError.requestFileUnusable(message: message, status: status)
            downloaderFailure = failure
            throw failure
        }
        announceThreads()
        do {
            let started = try makeDownloader(downloaderConfiguration)
            downloader = started
            if !settings.remotes.isEmpty {
                let warn = self.warn
                remoteTier = RemoteTier(specs: settings.remotes, namespace: cache.location.namespace.name,
                                        imageLimit: settings.maximumBytes, downloads: started,
                                        environment: environment, health: RemoteHealth(cacheRoot: cache.location.root),
                                        now: WallClock.now(), report: { warn?($0, $1) })
            }
            return started
        } catch {
            let failure: FetchError
            switch error {
            case .libraryMissing(let message): failure = .libraryMissing(message)
            default: failure = .downloaderUnavailable(error.reason)
            }
            downloaderFailure = failure
            throw failure
        }
    }

    static func isCancellation(_ result: Result<DownloadedBody, DownloadError>) -> Bool {
        if case .failure(.cancelled) = result { return true }
        return false
    }
}
