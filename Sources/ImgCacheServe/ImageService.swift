#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCore
import Synchronization

/// Answers an image server's requests from the cache: a URL in imgproxy's format is checked
/// (signature, options, source), its variant looked up in memory, then on disk, and made on a
/// miss (the original downloaded once, each size made from it), with one download and one
/// encode for every request waiting on the same variant. Knows no sockets: the HTTP side
/// hands it a request and sends the answer it gets back.
public final class ImageService: Sendable {
    public let settings: ServeSettings
    public let template: FetchTemplate
    public let memory: MemoryTier
    public let metrics: ServeMetrics
    private let pool: WorkPool
    /// Requests waiting for a download or a variant being made, by the key of what is awaited.
    private let waiting = Mutex<[String: [@Sendable (Fetched, WorkPool.WorkerContext) -> Void]]>([:])
    /// What is known of each source (format, size, frames), so that a hit needs no lookup of the original.
    private let sources = Mutex<[String: SourceFacts]>([:])
    /// For a path (and Accept) already checked and planned, the key of its variant and whether
    /// Accept chose the format: a hit in memory then reads no option and derives no key again.
    private let routes = Mutex<[String: Route]>([:])

    /// What a route is known by: the path and the Accept header (which may choose the format).
    static func route(of request: Request) -> String { request.path + "\n" + (request.accept ?? "") }

    /// A checked path's variant key, whether Accept chose its format, and its source's host.
    struct Route: Sendable {
        let key: String
        let negotiated: Bool
        let hostIsPrivate: @Sendable () -> Bool
    }
    private let privateHosts = PrivateHosts()
    /// ETags of files sent from disk (too large for the memory tier), by path and inode.
    private let etags = Mutex<[String: (inode: UInt64, etag: String)]>([:])

    /// Seconds a variant is answered from memory before the disk is asked about it again.
    static let memoryRecheck = 60.0

    /// Sources' facts and ETags kept at most, each table emptied when it fills.
    static let tableLimit = 65_536

    public init(settings: ServeSettings, template: FetchTemplate, metrics: ServeMetrics = ServeMetrics()) throws(SystemError) {
        self.settings = settings
        self.template = template
        self.metrics = metrics
        memory = MemoryTier(budget: settings.memoryBudget)
        pool = try WorkPool(threads: settings.workers, queueLimit: settings.queueLimit, limits: template.settings.decodeLimits)
    }

    /// A request as the HTTP side read it.
    public struct Request: Sendable {
        public var method: String
        /// The path, query removed.
        public var path: String
        public var accept: String?
        public var ifNoneMatch: String?
        /// Whether the client has gone (its connection closed) while the request waited.
        public var abandoned: (@Sendable () -> Bool)?

        public init(method: String, path: String, accept: String? = nil, ifNoneMatch: String? = nil) {
            self.method = method
            self.path = path
            self.accept = accept
            self.ifNoneMatch = ifNoneMatch
        }
    }

    /// What a source is, from its cached original.
    struct SourceFacts: Sendable {
        let format: ImageFormat?
        let width: Int?
        let height: Int?
        let frames: Int

        init(_ metadata: EntryMetadata) {
            format = metadata.format
            let upright = metadata.uprightSize
            width = upright.width
            height = upright.height
            frames = metadata.frameCount ?? 1
        }
    }

    /// A request checked: what to fetch and how to make it.
    struct Checked: Sendable {
        let url: String
        let options: ProcessingOptions
        let request: Request
    }

    /// Answers `request`, calling `done` once: at once for a hit or a refusal, from a worker's
    /// thread for a miss.
    public func respond(_ request: Request, done: @escaping @Sendable (ServeResponse) -> Void) {
        let route = ImageService.route(of: request)
        if let known = routes.withLock({ $0[route] }), let item = memory.item(known.key),
           WallClock.monotonic() - item.checkedAt < ImageService.memoryRecheck, !settings.refusesPrivateSources || !known.hostIsPrivate() {
            let answer = respond(with: item, request: request, negotiated: known.negotiated, tier: "memory")
            if answer.status == 200 { metrics.served(from: .memory) }
            return done(answer)
        }
        let checked: Checked
        switch check(request) {
        case .failure(let refusal): return done(refusal)
        case .success(let value): checked = value
        }
        if let answer = cached(checked) { return done(answer) }
        // What the request waits for: its variant when the source is known, else the original. A
        // request for what is already under way, or queued, waits for it outside the queue.
        let key: String
        let then: @Sendable (Fetched, WorkPool.WorkerContext) -> Void
        let work: @Sendable (WorkPool.WorkerContext) -> Fetched
        if let facts = facts(of: checked.url, lookingOnDisk: false) {
            let plan = self.plan(checked, facts: facts)
            key = plan.key.string
            then = afterVariant(checked, plan: plan, done: done)
            work = { [self] context in make(checked.url, transform: plan.transform, context: context) }
        } else {
            key = template.settings.cacheKey(for: checked.url).string
            then = afterOriginal(checked, done: done)
            work = { [self] _ in original(checked.url) }
        }
        guard claim(key, then: then) else { return }
        metrics.workers(busyChange: 0, queuedChange: 1)
        let accepted = pool.submit { [self] context in
            metrics.workers(busyChange: 1, queuedChange: -1)
            defer { metrics.workers(busyChange: -1, queuedChange: 0) }
            // A client that left while its request waited, alone in waiting for it, gets nothing made.
            if request.abandoned?() == true, waiting.withLock({ $0[key]?.count == 1 }) {
                let waiters = waiting.withLock { $0.removeValue(forKey: key) ?? [] }
                for waiter in waiters { waiter(Fetched(result: .failure(.interrupted(url: checked.url)), gone: true), context) }
                return
            }
            let result = work(context)
            let waiters = waiting.withLock { $0.removeValue(forKey: key) ?? [] }
            for waiter in waiters { waiter(result, context) }
        }
        if !accepted {
            metrics.workers(busyChange: 0, queuedChange: -1)
            let waiters = waiting.withLock { $0.removeValue(forKey: key) ?? [] }
            for waiter in waiters {
                metrics.refusedForBusy()
                waiter(Fetched(result: .failure(.interrupted(url: checked.url)), busy: true), WorkPool.WorkerContext(limits: template.settings.decodeLimits))
            }
        }
    }

    /// The answer of a request the queue had no room for.
    var busyAnswer: ServeResponse {
        var answer = ServeResponse.error(503, "busy: \(settings.queueLimit) requests already wait for a worker")
        answer.headers.append(("Retry-After", "1"))
        return answer
    }

    /// Makes `then` the first request waiting on `key` (true: its work is to be queued), or adds
    /// it to the requests already waiting (false).
    private func claim(_ key: String, then: @escaping @Sendable (Fetched, WorkPool.WorkerContext) -> Void) -> Bool {
        waiting.withLock { table in
            if table[key] != nil {
                table[key]!.append(then)
                return false
            }
            table[key] = [then]
            return true
        }
    }

    /// Stops the workers once the queue is empty.
    public func close() { pool.close() }

    // MARK: - Checks

    func check(_ request: Request) -> Result<Checked, ServeResponse> {
        let path: ImgproxyPath
        do {
            path = try ImgproxyPath(parsing: request.path)
        } catch {
            return .failure(.error(400, "bad URL: \(error)"))
        }
        if !settings.allowsUnsigned {
            do {
                guard try settings.signature.accepts(path.signature, for: path.signedPart) else {
                    return .failure(.error(403, "bad signature"))
                }
            } catch {
                return .failure(.error(500, "signatures cannot be checked: \(error.reason)"))
            }
        }
        let options: ProcessingOptions
        do {
            options = try ProcessingOptions(path.options, fileExtension: path.fileExtension, presets: settings.presets)
        } catch {
            return .failure(.error(400, error.description))
        }
        let remote: RemoteURL
        do {
            remote = try RemoteURL(parsing: path.source)
        } catch {
            switch error {
            case .invalid(let reason): return .failure(.error(400, "bad source URL: \(reason)"))
            case .unsupportedScheme(let scheme): return .failure(.error(400, "bad source URL: unsupported scheme '\(scheme)' (only http and https)"))
            }
        }
        guard settings.sources.allows(remote) else { return .failure(.error(403, "source not allowed")) }
        if settings.refusesPrivateSources, privateHosts.reachesPrivate(remote.host) {
            return .failure(.error(403, ControlCharacters.escaped(RemoteURL.redacted(path.source)) + ": source not allowed: it reaches a loopback, "
                                   + "private, link-local, multicast or unspecified address"))
        }
        return .success(Checked(url: path.source, options: options, request: request))
    }

    // MARK: - Cache tiers

    /// The answer from memory or disk; nil on a miss.
    func cached(_ checked: Checked) -> ServeResponse? {
        guard let facts = facts(of: checked.url, lookingOnDisk: true) else { return nil }
        let plan = self.plan(checked, facts: facts)
        routes.withLock { table in
            if table.count >= ImageService.tableLimit { table.removeAll(keepingCapacity: true) }
            let host = (try? RemoteURL(parsing: checked.url))?.host ?? ""
            table[ImageService.route(of: checked.request)] = Route(
                key: plan.key.string, negotiated: plan.negotiated, hostIsPrivate: { [privateHosts] in privateHosts.reachesPrivate(host) })
        }
        // Each minute a hot item goes through the disk lookup again: it marks the entry used (cron's
        // `clean` trims the least recently used) and finds it removed or replaced.
        if let item = memory.item(plan.key.string), WallClock.monotonic() - item.checkedAt < ImageService.memoryRecheck {
            let answer = respond(with: item, checked: checked, plan: plan, tier: "memory")
            if answer.status == 200 { metrics.served(from: .memory) }
            return answer
        }
        let now = WallClock.now()
        let entry = template.cache.lookup(plan.key, now: now).entry
            ?? template.readOnlyCaches.lazy.compactMap { $0.lookup(plan.key) }.first
        guard let entry else {
            memory.remove(plan.key.string)
            return nil
        }
        guard let answer = respondIfThere(with: entry, checked: checked, plan: plan, tier: "disk") else { return nil }
        if answer.status == 200 { metrics.served(from: .disk) }
        return answer
    }

    /// How a request's image is made of a source, and the key it is kept under.
    struct Plan {
        /// Always one: every answer is encoded anew.
        let transform: ImageTransform
        let key: CacheKey
        /// Whether the format was chosen by the request's Accept (`Vary: Accept`).
        let negotiated: Bool
    }

    func plan(_ checked: Checked, facts: SourceFacts) -> Plan {
        let options = checked.options
        var format = options.format
        var negotiated = false
        if format == nil {
            negotiated = true
            format = AcceptNegotiation.format(accept: checked.request.accept, source: facts.format, animated: facts.frames > 1)
        }
        let size = facts.width.flatMap { width in facts.height.map { (width, $0) } }
        let transform = options.transform(sourceSize: size, format: format)
        return Plan(transform: transform, key: template.settings.variantKey(for: checked.url, transform), negotiated: negotiated)
    }

    func facts(of url: String, lookingOnDisk: Bool) -> SourceFacts? {
        if let known = sources.withLock({ $0[url] }) { return known }
        guard lookingOnDisk else { return nil }
        let key = template.settings.cacheKey(for: url)
        guard let entry = template.cache.lookup(key, now: WallClock.now()).entry
                ?? template.readOnlyCaches.lazy.compactMap({ $0.lookup(key) }).first else { return nil }
        let facts = SourceFacts(entry.metadata)
        remember(facts, of: url)
        return facts
    }

    private func remember(_ facts: SourceFacts, of url: String) {
        sources.withLock { table in
            if table.count >= ImageService.tableLimit { table.removeAll(keepingCapacity: true) }
            table[url] = facts
        }
    }

    // MARK: - Answers

    private func headers(etag: String, lastModified: String, contentType: String, negotiated: Bool, tier: String) -> [(String, String)] {
        var headers = [("Content-Type", contentType), ("ETag", etag), ("Last-Modified", lastModified),
                       ("Cache-Control", "public, max-age=\(settings.maxAge)"), ("X-Imgcache", tier),
                       // An image opened on its own runs nothing and is taken for nothing else.
                       ("X-Content-Type-Options", "nosniff"), ("Content-Security-Policy", "default-src 'none'; sandbox")]
        if negotiated { headers.append(("Vary", "Accept")) }
        return headers
    }

    private func notModified(_ etag: String, _ request: Request) -> Bool {
        guard let given = request.ifNoneMatch else { return false }
        return given.split(separator: ",").contains { part in
            let tag = part.trimmingCharacters()
            return tag == "*" || tag == etag || tag == "W/" + etag
        }
    }

    func respond(with item: MemoryTier.Item, checked: Checked, plan: Plan, tier: String) -> ServeResponse {
        respond(with: item, request: checked.request, negotiated: plan.negotiated, tier: tier)
    }

    func respond(with item: MemoryTier.Item, request: Request, negotiated: Bool, tier: String) -> ServeResponse {
        let headers = self.headers(etag: item.etag, lastModified: item.lastModified, contentType: item.contentType, negotiated: negotiated, tier: tier)
        if notModified(item.etag, request) { return ServeResponse(status: 304, headers: headers, body: .empty) }
        return ServeResponse(status: 200, headers: headers, body: request.method == "HEAD" ? .length(item.body.count) : .shared(item.body))
    }

    static func etag(of bytes: some Collection<UInt8>) -> String { "\"" + MD5.hexString(MD5.digest(bytes)) + "\"" }

    func respond(with entry: CacheEntry, checked: Checked, plan: Plan, tier: String) -> ServeResponse {
        respondIfThere(with: entry, checked: checked, plan: plan, tier: tier) ?? .error(500, "the cached file cannot be opened")
    }

    /// The answer from `entry`'s file; nil when the file went away since it was looked up (`clear`, `clean`).
    func respondIfThere(with entry: CacheEntry, checked: Checked, plan: Plan, tier: String) -> ServeResponse? {
        let metadata = entry.metadata
        let contentType = metadata.format?.mediaType ?? metadata.contentType ?? "application/octet-stream"
        let lastModified = HTTPDate.format(Int64(metadata.storedAt))
        let size = Int(metadata.byteCount)
        if size <= memory.budget / 8, let bytes = try? FileSystem.readFile(entry.path, limit: size + 1), bytes.count == size {
            let item = MemoryTier.Item(bytes: bytes, contentType: contentType, etag: ImageService.etag(of: bytes),
                                       lastModified: lastModified, path: entry.path, inode: entry.inode, checkedAt: WallClock.monotonic())
            memory.insert(item, for: plan.key.string)
            return respond(with: item, checked: checked, plan: plan, tier: tier)
        }
        // Too large for memory: sent from the file (sendfile), its ETag worked out once per file.
        let descriptor = open(entry.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        let etag: String
        if let known = etags.withLock({ $0[entry.path] }), known.inode == entry.inode {
            etag = known.etag
        } else {
            guard let digest = ImageService.fileDigest(descriptor) else {
                Glibc.close(descriptor)
                return .error(500, "the cached file cannot be read")
            }
            etag = digest
            etags.withLock { table in
                if table.count >= ImageService.tableLimit { table.removeAll(keepingCapacity: true) }
                table[entry.path] = (entry.inode, etag)
            }
        }
        let headers = self.headers(etag: etag, lastModified: lastModified, contentType: contentType, negotiated: plan.negotiated, tier: tier)
        if notModified(etag, checked.request) || checked.request.method == "HEAD" {
            Glibc.close(descriptor)
            if notModified(etag, checked.request) { return ServeResponse(status: 304, headers: headers, body: .empty) }
            return ServeResponse(status: 200, headers: headers, body: .length(size))
        }
        return ServeResponse(status: 200, headers: headers, body: .file(descriptor: descriptor, length: size))
    }

    /// The ETag of the open file's bytes, read from its start.
    static func fileDigest(_ descriptor: Int32) -> String? {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        var offset: off_t = 0
        while true {
            let count = chunk.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, offset) }
            if count < 0 { return nil }
            if count == 0 { break }
            bytes += chunk[..<count]
            offset += off_t(count)
        }
        return etag(of: bytes)
    }

    // MARK: - Misses

    /// What a request does once the original it waited for is there: its size is made.
    private func afterOriginal(_ checked: Checked, done: @escaping @Sendable (ServeResponse) -> Void)
        -> @Sendable (Fetched, WorkPool.WorkerContext) -> Void {
        { [self] fetched, context in
            if fetched.busy { return done(busyAnswer) }
            if fetched.gone { return done(.error(499, "the client went away")) }
            switch fetched.result {
            case .failure(let error): done(ServeResponse.error(ServeStatus.of(error), ServeResponse.message(error)))
            case .success(let original):
                let facts = SourceFacts(original.metadata)
                remember(facts, of: checked.url)
                // Each request that waited on the download makes its size on a worker of its own
                // (here when none is free), not one after another on this thread.
                let accepted = pool.submit { [self] context in makeVariant(checked, facts: facts, context: context, done: done) }
                if !accepted { makeVariant(checked, facts: facts, context: context, done: done) }
            }
        }
    }

    private func makeVariant(_ checked: Checked, facts: SourceFacts, context: WorkPool.WorkerContext,
                             done: @escaping @Sendable (ServeResponse) -> Void) {
        if let answer = cached(checked) { return done(answer) }
        let plan = self.plan(checked, facts: facts)
        awaitResult(key: plan.key.string, context: context, work: { [self] context in
            make(checked.url, transform: plan.transform, context: context)
        }, then: afterVariant(checked, plan: plan, done: done))
    }

    /// What a request does once the variant it waited for is made: its answer.
    private func afterVariant(_ checked: Checked, plan: Plan, done: @escaping @Sendable (ServeResponse) -> Void)
        -> @Sendable (Fetched, WorkPool.WorkerContext) -> Void {
        { [self] outcome, _ in
            if outcome.busy { return done(busyAnswer) }
            if outcome.gone { return done(.error(499, "the client went away")) }
            switch outcome.result {
            case .failure(let error): done(ServeResponse.error(ServeStatus.of(error), ServeResponse.message(error)))
            case .success(let fetched):
                let variant = fetched.variants.first
                let path = variant?.path ?? fetched.path
                let metadata = variant?.metadata ?? fetched.metadata
                if !(variant?.isStored ?? fetched.isStored) {
                    // Not kept (the cache is full): answered from the bytes made, read while they were there.
                    guard let bytes = outcome.unkeptBytes else { return done(.error(500, "the image was made but cannot be read")) }
                    let item = MemoryTier.Item(bytes: bytes, contentType: metadata.format?.mediaType ?? "application/octet-stream",
                                               etag: ImageService.etag(of: bytes), lastModified: HTTPDate.format(Int64(WallClock.now())),
                                               path: path, inode: 0)
                    metrics.served(from: .made)
                    return done(respond(with: item, checked: checked, plan: plan, tier: "made"))
                }
                let entry = CacheEntry(path: path, metadata: metadata, lastAccess: WallClock.now(), placement: .attribute, inode: metadata.inode)
                metrics.served(from: .made)
                done(respond(with: entry, checked: checked, plan: plan, tier: "made"))
            }
        }
    }

    /// Runs `work` once for every request waiting on `key`: the first runs it, on its thread;
    /// the others are answered with its result, on the same thread, after it.
    private func awaitResult(key: String, context: WorkPool.WorkerContext, work: (WorkPool.WorkerContext) -> Fetched,
                             then: @escaping @Sendable (Fetched, WorkPool.WorkerContext) -> Void) {
        let first = waiting.withLock { table -> Bool in
            if table[key] != nil {
                table[key]!.append(then)
                return false
            }
            table[key] = [then]
            return true
        }
        guard first else { return }
        let result = work(context)
        let waiters = waiting.withLock { $0.removeValue(forKey: key) ?? [] }
        for waiter in waiters { waiter(result, context) }
    }

    /// A fetch's answer, and the bytes of what it made but could not keep.
    struct Fetched: Sendable {
        let result: Result<FetchResult, FetchError>
        var unkeptBytes: [UInt8]?
        /// Not tried: the queue had no room (503), or the client had gone.
        var busy = false
        var gone = false
    }

    /// The original of `url`: the cached one, else downloaded (as `imgcache fetch` would, no
    /// variant made, so no decode).
    private func original(_ url: String) -> Fetched {
        let key = template.settings.cacheKey(for: url)
        if let entry = template.cache.lookup(key, now: WallClock.now()).entry
            ?? template.readOnlyCaches.lazy.compactMap({ $0.lookup(key) }).first {
            return Fetched(result: .success(FetchResult(url: url, path: entry.path, cacheType: .disk, metadata: entry.metadata)))
        }
        return download(url)
    }

    /// `transform`'s variant of `url` made on this thread (its decode in the thread's worker
    /// process), from the original.
    private func make(_ url: String, transform: ImageTransform, context: WorkPool.WorkerContext) -> Fetched {
        let found = original(url)
        guard case .success(let original) = found.result else { return found }
        var settings = template.settings
        settings.variants = [transform]
        let maker = VariantMaker(cache: template.cache, settings: settings, log: nil, lockHandle: context.lockHandle, decoder: context.decoder)
        var answer = maker.answer(for: original)
        // Removed between its lookup and its decode (`clear`, `clean`): fetched again, once.
        if case .failure(.notUsable(_, VariantMaker.originalWentAway)) = answer, case .success(let again) = download(url).result {
            answer = maker.answer(for: again)
        }
        var unkept: [UInt8]?
        if case .success(let made) = answer, let variant = made.variants.first, !variant.isStored {
            unkept = try? FileSystem.readFile(variant.path, limit: 1 << 30)
            unlink(variant.path)
        }
        return Fetched(result: answer, unkeptBytes: unkept)
    }

    /// One download of `url` by the fetcher, as `imgcache fetch` makes it.
    private func download(_ url: String) -> Fetched {
        let fetcher = ImageFetcher(cache: template.cache, readOnlyCaches: template.readOnlyCaches, settings: template.settings,
                                   downloaderConfiguration: template.downloads, environment: template.environment)
        var answer: Result<FetchResult, FetchError> = .failure(.interrupted(url: url))
        var unkept: [UInt8]?
        fetcher.fetch([url]) { _, result in
            answer = result
            // What was downloaded but not kept (the cache full) is removed as this returns: read now.
            if case .success(let fetched) = result, !fetched.isStored {
                unkept = try? FileSystem.readFile(fetched.path, limit: 1 << 30)
            }
        }
        fetcher.close()
        switch answer {
        case .success(let fetched) where fetched.cacheType == .downloaded || fetched.cacheType == .remote:
            metrics.originFetched(failed: false)
        case .failure(.download):
            metrics.originFetched(failed: true)
        default: break
        }
        return Fetched(result: answer, unkeptBytes: unkept)
    }
}

/// What the fetcher for a miss is made of: the cache and the settings of the command line.
public struct FetchTemplate: Sendable {
    public let cache: DiskCache
    public let readOnlyCaches: [ReadOnlyCache]
    public let settings: FetchSettings
    public let downloads: DownloadConfiguration
    public let environment: Environment

    public init(cache: DiskCache, readOnlyCaches: [ReadOnlyCache], settings: FetchSettings, downloads: DownloadConfiguration,
                environment: Environment) {
        self.cache = cache
        self.readOnlyCaches = readOnlyCaches
        var settings = settings
        settings.credentialKey = settings.credentialKey ?? CredentialKey(cache: cache)
        self.settings = settings
        self.downloads = downloads
        self.environment = environment
    }
}
