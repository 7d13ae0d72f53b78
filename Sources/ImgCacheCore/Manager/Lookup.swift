/// What a lookup found: an answer, or a download to make.
enum LookupOutcome: Sendable {
    case answer(Result<FetchResult, FetchError>, note: String?)
    /// A string that is not a fetchable URL: answered at once, never requested.
    case refused(FetchError)
    /// `stamp`: what the cache's listings said before the lookup (nil when there are none),
    /// so that it is repeated after taking the download lock only if something changed.
    case download(RemoteURL, cached: CacheEntry?, note: String?, failedBefore: Bool, stamp: ShardListings.Stamp?)
}

/// One URL's lookup: values only, so that a list's reader thread runs it too.
///
/// The cache answers first: a cached entry is always served, and the
/// failed-URL list answers only misses.
struct Lookup: Sendable {
    /// Whether to describe what was found (for -v); building the text costs more than a hit.
    let wantsNotes: Bool
    let settings: FetchSettings
    let cache: DiskCache
    let readOnlyCaches: [ReadOnlyCache]
    let failedURLs: FailedURLStore
    /// What the run's requests carry beyond the URL: a failure answers only requests like it.
    let request: RequestIdentity

    func run(_ url: String, key: CacheKey, ttl: () -> AgeLimit) -> LookupOutcome {
        // Read before looking; a lookup of variants looks in other shards too.
        let stamp = settings.variants.isEmpty ? cache.listings.stamp(key.shardIndex) : nil
        let now = WallClock.now()
        let options = settings.options
        var cached: CacheEntry?
        var note: String?
        if !options.contains(.fromLoaderOnly) {
            if let answer = variantsFound(url, key: key, now: now) { return answer }
            switch cache.lookup(key, now: now) {
            case .hit(let entry): cached = entry
            case .miss: break
            case .damaged(let path, let reason, let removed):
                note = wantsNotes ? "damaged entry \(path): \(reason)" + (removed ? "; removed, fetching again" : "") : nil
            case .unreadable(_, let error):
                note = wantsNotes ? "\(error); left in place, fetching again" : nil
            }
            // A refresh of stale entries only (--refresh=stale) serves a fresh one as a hit.
            if let entry = cached, !options.contains(.refreshCached) || (settings.refreshesOnlyStale && entry.metadata.isFresh(at: now)) {
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
           let records = failedURLs.lookup(settings.failureKey(for: url), ttl: .never, now: now) {
            // Any record (another request's, an expired one) is removed by a success.
            failedBefore = true
            let asked = request.fingerprint(for: url)
            if let record = records.last(where: { $0.scope.covers(asked, sizeLimit: settings.maximumBytes) }) {
                let ttl = ttl()
                if !ttl.isExpired(record.failedAt, now: now) {
                    return .answer(.failure(.blacklisted(url: url, reason: record.reason, failedAt: record.failedAt, ttl: ttl, now: now)),
                                   note: wantsNotes ? "\(RemoteURL.displayed(url)): on the failed list since \(Timestamp.iso8601(record.failedAt))" : nil)
                }
            }
        }
        return .download(remote, cached: cached, note: note, failedBefore: failedBefore, stamp: stamp)
    }

    /// Every variant asked for already in the cache: the answer, whether or not
    /// the original still is; while it is, only variants made from it.
    private func variantsFound(_ url: String, key: CacheKey, now: Double) -> LookupOutcome? {
        guard !settings.variants.isEmpty, !settings.options.contains(.refreshCached) else { return nil }
        let variants = VariantLookup(cache: cache, settings: settings)
        // The cached original, looked up once, when it is needed.
        var looked: CacheEntry??
        func cachedOriginal() -> CacheEntry? {
            if looked == nil { looked = .some(cache.lookup(key, now: now).entry) }
            return looked!
        }
        // --keep-svg: an SVG's variants (made by a run without it) are not its answer; nor, when the original is not
        // there to say what it is, any variants.
        if settings.keepsSVG, cachedOriginal().map({ $0.metadata.format == .svg && SVGActiveContent.isInert(path: $0.path) }) ?? true {
            return nil
        }
        var found = variants.all(of: url, madeFrom: nil, now: now)
        if found == nil, settings.keepsOriginal, let entry = cachedOriginal() {
            // Some stored under the key of a transform that makes the same bytes (--format naming the original's own).
            found = variants.all(of: url, madeFrom: EntryMetadata.Source(of: entry.metadata), source: entry.metadata, now: now)
        }
        guard let found else {
            // Without the original here, another machine's folder may hold them all (made there with
            // --no-original, or from its own original).
            guard cachedOriginal() == nil else { return nil }
            for folder in readOnlyCaches {
                guard let made = VariantLookup(readOnly: folder, settings: settings).all(of: url, madeFrom: nil, now: now),
                      made.contains(where: { $0.metadata.placeholder == nil }) else { continue }
                let original = FetchResult(url: url, path: made[0].path, cacheType: .disk, metadata: made[0].metadata, isStored: false)
                return .answer(.success(FetchResult(variants: made, of: original)),
                               note: wantsNotes ? "hit (read-only): \(made.map(\.path).joined(separator: ", "))" : nil)
            }
            return nil
        }
        // Only a placeholder asked for: the answer is the original, which must be there.
        if !found.contains(where: { $0.metadata.placeholder == nil }), cachedOriginal() == nil { return nil }
        var original = FetchResult(url: url, path: found[0].path, cacheType: .disk, metadata: found[0].metadata, isStored: false)
        if let entry = cachedOriginal() {
            // Made from another body than the one cached (a refresh brought new bytes): made again.
            let source = EntryMetadata.Source(of: entry.metadata)
            guard found.allSatisfy({ $0.metadata.source == source }) else { return nil }
            original = FetchResult(url: url, path: entry.path, cacheType: .disk, metadata: entry.metadata)
        }
        return .answer(.success(FetchResult(variants: found, of: original)),
                       note: wantsNotes ? "hit: \(found.map(\.path).joined(separator: ", "))" : nil)
    }
}
