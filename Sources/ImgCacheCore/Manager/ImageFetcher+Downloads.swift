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
    func bodyDirectory(for key: CacheKey) throws(FetchError) -> String {
        if settings.options.contains(.cacheMemoryOnly) { return DownloadStore.memoryOnlyDirectory }
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
        let ttl = settings.failedTTL ?? NamespaceSettings.load(from: cache.directory).failedTTL ?? FailedURLStore.defaultTTL
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

    static func isCancellation(_ result: Result<DownloadedFile, DownloadError>) -> Bool {
        if case .failure(.cancelled) = result { return true }
        return false
    }
}
