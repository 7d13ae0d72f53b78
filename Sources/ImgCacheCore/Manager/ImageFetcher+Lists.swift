/// Lists of URLs read as they are answered (`fetch -i`, `prefetch`): a
/// reader thread reads and looks up ahead of the answers by a bounded window.
extension ImageFetcher {
    /// Fetches the URLs of `list` as `fetch(_:deliver:)` does, answering each
    /// in the order of the list, but streaming: at most `window` URLs (by
    /// default `readAhead`) are read ahead of the answers delivered, so a
    /// list of any length takes the same memory. A URL repeated while its first request runs shares its answer;
    /// one repeated later is looked up again (a hit, usually).
    public func fetch<E: Error>(_ list: URLList, window: Int? = nil, deliver: (FetchOutcome) throws(E) -> Void,
                                update report: (PrefetchUpdate) throws(E) -> Void) throws(E) {
        var answers = ReorderBuffer<FetchOutcome>()
        try stream(list, window: window, repeats: .lookedUpAgain, releasesOnAnswer: false, deliver: { (update: PrefetchUpdate) throws(E) in
            guard case .answered(let outcome) = update else { return try report(update) }
            answers.insert(outcome, at: outcome.index)
            let delivered = try answers.drain { (_, ready) throws(E) in try deliver(ready) }
            // The reader may read as many more as were delivered in order: a
            // slow first URL holds the window, not memory.
            list.release(delivered)
        })
    }

    /// URLs read ahead of the answers, per download slot.
    static let readAheadPerSlot = 16

    /// How many URLs of a list are read ahead of the answers: enough to keep
    /// every download slot fed while answers wait their turn, and no more, so
    /// a list of any length takes the same memory.
    public var readAhead: Int {
        // With --per-host or --rate one server's URLs wait their turn: the window reaches past a
        // long run of them to the other servers' (a run of more than this still holds them up).
        max(countsLocksByServer ? 4096 : 256, downloaderConfiguration.maximumConcurrentDownloads * ImageFetcher.readAheadPerSlot)
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
    /// (by default `readAhead`) between the list reader and the answers.
    /// Memory stays flat but for 8 bytes per distinct key (`ListLookup`).
    public func prefetch<E: Error>(_ list: URLList, window: Int? = nil, deliver: (PrefetchUpdate) throws(E) -> Void) throws(E) {
        try stream(list, window: window, repeats: .skipped, releasesOnAnswer: true, deliver: deliver)
    }

    /// Runs the URLs of `list`, looked up on its reader thread (`ListLookup`).
    /// `releasesOnAnswer`: the reader gets a URL's credit back as soon as it is
    /// answered; otherwise the caller gives credits back.
    private func stream<E: Error>(_ list: URLList, window: Int?, repeats: FetchRun.Repeats, releasesOnAnswer: Bool,
                                  deliver: (PrefetchUpdate) throws(E) -> Void) throws(E) {
        precondition(!hasRun, "an ImageFetcher runs once")
        announceThreads()
        var run = FetchRun(repeats: repeats, list: list)
        run.releasesOnAnswer = releasesOnAnswer
        let messages = self.messages
        // The failed TTL is read up front for the reader thread.
        let looker = ListLookup(lookup: lookup, failedTTL: failedTTL(), skipsRepeats: repeats == .skipped)
        defer { list.stop() }
        do {
            try list.start(window: window ?? readAhead) { items in messages.push(.looked(looker.look(items))) }
        } catch {
            try deliver(.inputFailed(error))
            return
        }
        run.wantsIdle = true
        try self.run(&run, emit: { (outcome: FetchOutcome) throws(E) in try deliver(.answered(outcome)) }, update: deliver)
    }
}

extension ImageFetcher {
    /// The latest failure remembered for `url` (expired or not), for saying why a row has no image.
    public func lastFailure(of url: String) -> FailedURLStore.Record? {
        let key = settings.cacheKey(for: url), now = WallClock.now()
        // Also a read-only cache's list: another machine's prefetch may be the one that saw it fail.
        let stores = [failedURLs] + readOnlyCaches.map { FailedURLStore(namespaceDirectory: $0.directory) }
        return stores.compactMap { $0.lookup(key, ttl: .never, now: now)?.max { $0.failedAt < $1.failedAt } }.max { $0.failedAt < $1.failedAt }
    }
}
