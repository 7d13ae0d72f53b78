#if canImport(Glibc)
import Glibc
#endif

/// How the manager turns a lookup into an answer or a download: the
/// downloader (made on the first miss), the folder a large body goes to, and
/// the failed TTL that lookups use.
extension ImageFetcher {
    /// Acts on a lookup's outcome for `request` (registered under `slot`
    /// when it waits in the run): answers it, or queues its download.
    func proceed<E: Error>(_ outcome: LookupOutcome, _ request: PendingFetch, slot existing: Int?, _ run: inout FetchRun,
                                   emit: (FetchOutcome) throws(E) -> Void) throws(E) {
        func answer(_ result: Result<FetchResult, FetchError>) throws(E) {
            if let existing {
                run.pending[existing] = nil
                run.slotByKey[request.fingerprint] = nil
            }
            try settle(request.fingerprint, result, first: request.firstIndex, url: request.url, repeats: request.repeats, &run, emit: emit)
        }
        let remote: RemoteURL, cached: CacheEntry?, failedBefore: Bool
        switch outcome {
        case .answer(let result, let note):
            if let note { log?(note) }
            // A success under RetryFailed takes the URL off the list, a cached one too.
            if case .success = result, settings.options.contains(.retryFailed) { failedURLs.remove(Lookup.failureKey(request.url)) }
            if settings.remoteReshare, case .success(let hit) = result, hit.cacheType == .disk { reshare(hit, key: request.key, &run) }
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
            try answer(.failure(.interrupted(url: request.url)))
            return
        }
        var miss = PendingFetch(url: request.url, key: request.key, fingerprint: request.fingerprint,
                                cached: cached, firstIndex: request.firstIndex)
        miss.repeats = request.repeats
        miss.hadFailedRecord = failedBefore
        miss.origin = remote
        do throws(FetchError) {
            _ = try startDownloader()
            // Made (or found writable) before any traffic, remote or origin.
            _ = try bodyDirectory(for: request.key)
            let slot = existing ?? run.nextSlot
            if existing == nil { run.nextSlot += 1 }
            run.pending[slot] = miss
            run.slotByKey[request.fingerprint] = slot
            // The remote stores answer misses; a refresh, FromLoaderOnly and CacheMemoryOnly go to the origin.
            if cached == nil, settings.options.isDisjoint(with: [.fromLoaderOnly, .cacheMemoryOnly]),
               let store = remoteTier?.readable(after: nil) {
                askRemote(store, slot: slot, &run)
            } else {
                try submitOrigin(slot, &run)
            }
        } catch {
            if let existing = existing ?? run.slotByKey[request.fingerprint] {
                run.pending[existing] = nil
                run.slotByKey[request.fingerprint] = nil
            }
            try settle(request.fingerprint, .failure(error), first: request.firstIndex, url: request.url, repeats: request.repeats, &run, emit: emit)
        }
    }

    /// Queues the origin download of the request in `slot`.
    func submitOrigin(_ slot: Int, _ run: inout FetchRun) throws(FetchError) {
        guard let miss = run.pending[slot], let origin = miss.origin else { return }
        let bodyDirectory = try bodyDirectory(for: miss.key)
        log?("download: \(RemoteURL.displayed(miss.url))" + (miss.validators != nil ? " (conditional)" : ""))
        let downloadRequest = settings.request(for: origin, bodyDirectory: bodyDirectory, validators: miss.validators)
        let messages = self.messages
        // Progress costs a message ten times a second per transfer: only for a listener.
        let wantsProgress = progress != nil
        run.submissions.append(DownloadSubmission(
            request: downloadRequest, priority: settings.priority,
            onEvent: { event in
                if case .progress = event, !wantsProgress { return }
                messages.push(.event(slot, event))
            },
            completion: { result in messages.push(.finished(slot, result)) }))
    }

    // MARK: - Remote stores

    /// The entry's place in the remote stores.
    func remoteKey(_ key: CacheKey) -> RemoteKey {
        RemoteKey(namespace: cache.location.namespace.name, digest: key.digest)
    }

    /// Asks remote store `store` for the request in `slot`; the answer comes as a message.
    func askRemote(_ store: Int, slot: Int, _ run: inout FetchRun) {
        guard let tier = remoteTier, let miss = run.pending[slot] else { return }
        run.pending[slot]?.remoteStore = store
        let messages = self.messages
        log?("\(RemoteURL.displayed(miss.url)): asking remote \(tier.stores[store].backend.spec.identity)")
        tier.stores[store].backend.get(remoteKey(miss.key)) { result in messages.push(.remote(slot: slot, store: store, result)) }
    }

    /// A remote store answered for the request in `slot`: an object that passes
    /// every check is stored and answers it; otherwise the next store, or the
    /// origin, is asked. A store that failed is given up for the run.
    func remoteAnswered<E: Error>(slot: Int, store: Int, _ result: Result<[UInt8]?, RemoteFailure>, _ run: inout FetchRun,
                                  emit: (FetchOutcome) throws(E) -> Void) throws(E) {
        guard let miss = run.pending[slot], let tier = remoteTier else { return }
        func finish(_ answer: Result<FetchResult, FetchError>) throws(E) {
            run.pending[slot] = nil
            run.slotByKey[miss.fingerprint] = nil
            remember(answer, for: miss)
            try settle(miss.fingerprint, answer, first: miss.firstIndex, url: miss.url, repeats: miss.repeats, &run, emit: emit)
        }
        if run.interrupted { return try finish(.failure(.interrupted(url: miss.url))) }
        let identity = tier.stores[store].backend.spec.identity
        switch result {
        case .success(let data?):
            switch downloadStore.storeRemote(data, for: miss, from: identity) {
            case .stored(let fetched):
                tier.statistics.hits += 1
                return try finish(.success(fetched))
            case .failed(let error):
                return try finish(.failure(error))
            case .defective(let reason):
                // A bad object is a miss: the origin answers, and the object is written anew.
                tier.statistics.errors += 1
                tier.damaged.insert(RemoteTier.Damaged(store: store, key: remoteKey(miss.key)))
                warn?("remote \(identity): bad object for \(RemoteURL.displayed(miss.url)) (\(reason)); fetched from the origin", nil)
            }
        case .success(nil):
            log?("\(RemoteURL.displayed(miss.url)): not in remote \(identity)")
        case .failure(let failure):
            tier.giveUp(store, failure, now: WallClock.now())
        }
        if let next = tier.readable(after: store) {
            askRemote(next, slot: slot, &run)
            return
        }
        do throws(FetchError) {
            try submitOrigin(slot, &run)
        } catch {
            try finish(.failure(error))
        }
    }

    /// Writes a new entry's bytes to every remote store in use that takes writes.
    func share(_ stored: EntryCommitter.Body, of key: CacheKey, as fetched: FetchResult, _ run: inout FetchRun) {
        guard let tier = remoteTier, fetched.isStored else { return }
        let stores = tier.writable
        // An image too large for an object is only kept locally.
        guard !stores.isEmpty, fetched.metadata.byteCount < Int64(RemoteObject.maximumLength - 4096) else { return }
        let bytes: [UInt8]
        switch stored {
        case .bytes(let read): bytes = read
        case .file(let path):
            // A body checked from its head and tail is read now, only for the remote stores.
            guard let read = try? FileSystem.readFile(path, limit: RemoteObject.maximumLength) else { return }
            bytes = read
        }
        let metadata = fetched.metadata
        let object: [UInt8]
        do {
            object = try RemoteObject(bytes: bytes, contentType: metadata.contentType, url: fetched.url, etag: metadata.etag,
                                      lastModified: metadata.lastModified, storedAt: metadata.storedAt).encoded()
        } catch {
            tier.statistics.errors += 1
            warn?("cannot write to the remote stores: \(error)", nil)
            return
        }
        let messages = self.messages
        for store in stores {
            run.pendingWrites += 1
            let place = remoteKey(key)
            // A damaged object, or one a refresh found outdated, is replaced; otherwise the first writer's stays.
            let replacing = tier.damaged.remove(RemoteTier.Damaged(store: store, key: place)) != nil
                || fetched.cacheType == .refreshed
            tier.stores[store].backend.put(place, object, replacing: replacing) { result in
                messages.push(.remoteWritten(store: store, result))
            }
        }
    }

    /// With --remote-reshare, a local hit is written to the remote stores too.
    func reshare(_ hit: FetchResult, key: CacheKey, _ run: inout FetchRun) {
        guard (try? startDownloader()) != nil else { return }
        share(.file(hit.path), of: key, as: hit, &run)
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
        announceThreads()
        do {
            let started = try makeDownloader(downloaderConfiguration)
            downloader = started
            if !settings.remotes.isEmpty {
                let warn = self.warn
                remoteTier = RemoteTier(specs: settings.remotes, namespace: cache.location.namespace.name, downloads: started,
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
