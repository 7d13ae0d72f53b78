/// Answers "give me these images": each from the cache, or downloaded (all
/// misses at once, coalesced, through one `Downloader`), checked, and stored
/// atomically (SDWebImageManager's loadImage flow).
///
/// The download thread only moves bytes; checking and storing happen on the
/// calling thread as the downloads finish.
public final class ImageFetcher {
    public let cache: DiskCache
    /// Consulted, in order, after `cache` misses; never written.
    public let readOnlyCaches: [ReadOnlyCache]
    public let settings: FetchSettings
    public let downloaderConfiguration: DownloadConfiguration
    /// Called with a line of detail for `-v`.
    public var log: (String) -> Void = { _ in }

    /// Created on the first miss, so a hit never loads libcurl.
    private var downloader: Downloader?

    public init(cache: DiskCache, readOnlyCaches: [ReadOnlyCache] = [], settings: FetchSettings = FetchSettings(),
                downloaderConfiguration: DownloadConfiguration = DownloadConfiguration()) {
        self.cache = cache
        self.readOnlyCaches = readOnlyCaches
        self.settings = settings
        self.downloaderConfiguration = downloaderConfiguration
    }

    /// Fetches `urls`, handing each answer to `deliver` in the order of `urls`,
    /// each as soon as it and all before it are known. The same URL twice is
    /// fetched once. An error thrown by `deliver` stops the run and is rethrown.
    public func fetch<E: Error>(_ urls: [String], deliver: (Int, Result<FetchResult, FetchError>) throws(E) -> Void) throws(E) {
        var answers = [Result<FetchResult, FetchError>?](repeating: nil, count: urls.count)
        var delivered = 0
        func settle(_ index: Int, _ answer: Result<FetchResult, FetchError>) throws(E) {
            answers[index] = answer
            while delivered < answers.count, let ready = answers[delivered] {
                answers[delivered] = nil
                try deliver(delivered, ready)
                delivered += 1
            }
        }

        // Hits are answered at once; misses are gathered, one per key.
        var misses: [PendingFetch] = []
        var missByKey: [String: Int] = [:]
        for (index, url) in urls.enumerated() {
            let remote: RemoteURL
            do {
                remote = try RemoteURL(parsing: url)
            } catch {
                switch error {
                case .invalid(let reason): try settle(index, .failure(.invalidURL(url: url, reason: reason)))
                case .unsupportedScheme(let scheme): try settle(index, .failure(.unsupportedScheme(url: url, scheme: scheme)))
                }
                continue
            }
            let key = CacheKey(settings.keyFilter.key(for: url))
            if let slot = missByKey[key.string] {
                misses[slot].indices.append(index)
                continue
            }
            var cached: CacheEntry?
            switch cache.lookup(key, now: WallClock.now()) {
            case .hit(let entry): cached = entry
            case .miss: break
            case .damaged(let path, let reason, let removed):
                log("damaged entry \(path): \(reason)" + (removed ? "; removed, fetching again" : ""))
            }
            if let entry = cached, !settings.refreshCached {
                log("hit: \(entry.path)")
                try settle(index, .success(FetchResult(url: url, path: entry.path, cacheType: .disk, metadata: entry.metadata)))
                continue
            }
            // Read-only folders answer misses; a refresh always goes to the server.
            if cached == nil, !settings.refreshCached,
               let entry = readOnlyCaches.lazy.compactMap({ $0.lookup(key) }).first {
                log("hit (read-only): \(entry.path)")
                try settle(index, .success(FetchResult(url: url, path: entry.path, cacheType: .disk, metadata: entry.metadata)))
                continue
            }
            missByKey[key.string] = misses.count
            misses.append(PendingFetch(url: remote, key: key, cached: cached, indices: [index]))
        }
        guard !misses.isEmpty else { return }

        // An unwritable cache or a missing libcurl fails every miss before any traffic.
        let downloader: Downloader
        do throws(FetchError) {
            do { try cache.prepareForStores() } catch { throw .cacheUnwritable(error) }
            downloader = try startDownloader()
        } catch {
            for miss in misses { for index in miss.indices { try settle(index, .failure(error)) } }
            return
        }

        // Bodies are written in their entry's shard folder, so that storing one is a rename within it.
        var submissions: [DownloadSubmission] = []
        var readyShards: Set<String> = []
        let messages = BlockingQueue<DownloadMessage>()
        for (slot, miss) in misses.enumerated() {
            let shard = cache.shardDirectory(for: miss.key)
            if !readyShards.contains(shard) {
                do throws(SystemError) {
                    try FileSystem.makeDirectories(shard)
                    readyShards.insert(shard)
                } catch {
                    for index in miss.indices { try settle(index, .failure(.cacheUnwritable(error))) }
                    continue
                }
            }
            log("download: \(RemoteURL.redacted(miss.url.string))" + (miss.validators != nil ? " (conditional)" : ""))
            let request = settings.request(for: miss.url, bodyDirectory: shard, validators: miss.validators)
            submissions.append(DownloadSubmission(
                request: request, priority: settings.priority,
                onEvent: { event in if case .retrying = event { messages.push(.event(slot, event)) } },
                completion: { result in messages.push(.finished(slot, result)) }))
        }
        downloader.submit(submissions)
        var remaining = submissions.count
        while remaining > 0 {
            switch messages.pop() {
            case .event(let slot, .retrying(let attempt, let total, let delay, let error)):
                log("retry \(attempt) of \(total) in \(Self.formatDelay(delay)) for \(RemoteURL.redacted(misses[slot].url.string)): \(error.reason)")
            case .event:
                break
            case .finished(let slot, let result):
                remaining -= 1
                let miss = misses[slot]
                let answer = store(result, for: miss)
                for index in miss.indices { try settle(index, answer) }
            }
        }
    }

    /// Finishes pending transfers' bookkeeping and writes the cookie jar.
    public func close() {
        downloader?.close()
    }

    private func startDownloader() throws(FetchError) -> Downloader {
        if let downloader { return downloader }
        do {
            let started = try Downloader(configuration: downloaderConfiguration)
            downloader = started
            return started
        } catch {
            switch error {
            case .libraryMissing(let message): throw .libraryMissing(message)
            default: throw .libraryMissing(error.reason)
            }
        }
    }

    /// Turns a finished download into a cache entry (or a freshened one after a 304).
    private func store(_ result: Result<DownloadedFile, DownloadError>, for miss: PendingFetch) -> Result<FetchResult, FetchError> {
        let url = miss.url.string
        let file: DownloadedFile
        switch result {
        case .success(let downloaded): file = downloaded
        case .failure(.localWrite(let error)): return .failure(.cacheUnwritable(error))
        case .failure(.libraryMissing(let message)): return .failure(.libraryMissing(message))
        case .failure(let error): return .failure(.download(url: url, error))
        }
        let response = file.response
        let shown = RemoteURL.redacted(url)
        if response.effectiveURL != url { log("\(shown): redirected to \(RemoteURL.redacted(response.effectiveURL))") }
        let retried = response.attempts > 1 ? " after \(response.attempts) attempts" : ""
        log("\(shown): HTTP \(response.statusCode), \(response.byteCount) bytes in \(Int(response.elapsed * 1000)) ms\(retried)")

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
                log("\(shown): not modified, kept \(entry.path)")
                return .success(FetchResult(url: url, path: entry.path, cacheType: .refreshed, metadata: entry.metadata))
            } catch {
                return .failure(.cacheUnwritable(error))
            }
        }

        let header: ImageHeader
        do {
            header = try verify(file, url: url)
        } catch {
            return .failure(error)
        }
        let pending = cache.adopt(file.path, for: miss.key)
        defer { pending.discard() }
        do {
            let entry = try cache.commit(pending) { inode, size in
                EntryMetadata(fileName: miss.key.fileName, inode: inode, byteCount: size, key: miss.key.storedForm, url: RemoteURL.redacted(url),
                              etag: response.etag, lastModified: response.lastModified, contentType: response.contentType,
                              format: header.format, width: header.width, height: header.height,
                              frameCount: header.frameCount, storedAt: now)
            }
            return .success(FetchResult(url: url, path: entry.path, cacheType: miss.cached == nil ? .none : .refreshed,
                                        metadata: entry.metadata))
        } catch {
            return .failure(.cacheUnwritable(error))
        }
    }

    /// Accepts the downloaded bytes only if they are a supported image whose header decodes.
    private func verify(_ file: DownloadedFile, url: String) throws(FetchError) -> ImageHeader {
        let bytes: [UInt8]
        do {
            bytes = try FileSystem.readFile(file.path, limit: Int(file.response.byteCount)) ?? []
        } catch {
            throw .cacheUnwritable(error)
        }
        do {
            return try ImageHeader.probe(bytes)
        } catch {
            switch error {
            case .notAnImage: throw .notAnImage(url: url, contentType: file.response.contentType)
            case .unsupported(let format): throw .unsupportedFormat(url: url, format)
            case .corrupt(let format, let reason):
                throw .corruptImage(url: url, reason: "corrupt \(format.displayName) image: \(reason)")
            case .libraryMissing(let message): throw .libraryMissing(message)
            }
        }
    }

    static func formatDelay(_ seconds: Double) -> String {
        let tenths = Int((seconds * 10).rounded())
        return "\(tenths / 10).\(tenths % 10) s"
    }
}

/// A URL that needs the network, and the inputs that asked for it.
private struct PendingFetch {
    let url: RemoteURL
    let key: CacheKey
    /// The entry being revalidated (RefreshCached), if any.
    let cached: CacheEntry?
    var indices: [Int]

    var validators: Validators? {
        cached.flatMap { Validators(etag: $0.metadata.etag, lastModified: $0.metadata.lastModified) }
    }
}

/// What the download thread tells the fetching thread.
private enum DownloadMessage: Sendable {
    case event(Int, DownloadEvent)
    case finished(Int, Result<DownloadedFile, DownloadError>)
}
