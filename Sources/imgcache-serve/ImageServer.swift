#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import ImgCacheCLI
import ImgCacheCore
import ImgCacheServe
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// What every connection's handlers share: the image service, the log, and the count of
/// requests being answered, which SIGTERM waits for.
final class ServerContext: Sendable {
    let service: ImageService
    let log: AccessLog
    private let inFlight = Mutex(0)
    private let drainingFlag = Mutex(false)
    private let connections = Mutex(0)
    let maximumConnections: Int

    init(service: ImageService, log: AccessLog, maximumConnections: Int) {
        self.service = service
        self.log = log
        self.maximumConnections = maximumConnections
    }

    var draining: Bool { drainingFlag.withLock { $0 } }
    func startDraining() { drainingFlag.withLock { $0 = true } }

    func requestStarted() { inFlight.withLock { $0 += 1 } }
    func requestEnded() { inFlight.withLock { $0 -= 1 } }
    var requestsInFlight: Int { inFlight.withLock { $0 } }

    /// Counts a new connection in; false when the limit is reached.
    func connectionOpened() -> Bool {
        let taken = connections.withLock { count -> Bool in
            guard count < maximumConnections else { return false }
            count += 1
            return true
        }
        if taken { service.metrics.connections(change: 1) }
        return taken
    }

    func connectionClosed() {
        connections.withLock { $0 -= 1 }
        service.metrics.connections(change: -1)
    }

    var openConnections: Int { connections.withLock { $0 } }
    /// Requests answered when the drain last looked (only the draining thread uses it).
    private let answeredSeen = Mutex(0)
    var answeredAtLastLook: Int {
        get { answeredSeen.withLock { $0 } }
        set { answeredSeen.withLock { $0 = newValue } }
    }
}

/// Counts a connection out when it closes.
final class ConnectionCounter: ChannelInboundHandler {
    typealias InboundIn = NIOAny
    private let server: ServerContext

    init(server: ServerContext) { self.server = server }

    func channelInactive(context: ChannelHandlerContext) {
        server.connectionClosed()
        context.fireChannelInactive()
    }
}

/// `imgcache serve` itself: listens, answers through `ImageService`, and stops on SIGTERM
/// once the requests in flight are answered (at most `--grace`).
enum ImageServer {
    static func run(_ launch: ServeLaunch) -> ExitStatus {
        let arguments = launch.arguments
        var settings = ServeSettings()
        do {
            settings.signature = URLSignature(pairs: try keyPairs(launch), size: try signatureSize(launch.environment))
        } catch {
            launch.error(error.description)
            return .usage
        }
        if settings.signature.pairs.isEmpty, !arguments.allowsUnsigned {
            launch.error("no key to check signatures with: set IMGPROXY_KEY and IMGPROXY_SALT (hex), give --key-file, or --allow-unsigned")
            return .usage
        }
        settings.allowsUnsigned = arguments.allowsUnsigned
        settings.refusesPrivateSources = !arguments.allowsPrivateSources
        do {
            settings.sources = try SourcePolicy(prefixes: arguments.allowedSources)
        } catch {
            launch.error(error.description)
            return .usage
        }
        if let path = arguments.presets {
            guard let bytes = try? FileSystem.readFile(path, limit: 1 << 20), let text = String(validating: bytes, as: UTF8.self) else {
                launch.error("cannot read --presets \(ControlCharacters.escaped(path))")
                return .noInput
            }
            do { settings.presets = try PresetTable(fileText: text) } catch {
                launch.error("--presets \(ControlCharacters.escaped(path)): \(error)")
                return .usage
            }
            // Each preset read as a request would read it, so that a bad one is said now, not per request.
            for name in settings.presets.names {
                do {
                    _ = try ProcessingOptions([ImgproxyPath.Option(name: "pr", arguments: [name])], fileExtension: nil, presets: settings.presets)
                } catch {
                    launch.error("--presets \(ControlCharacters.escaped(path)): preset '\(name)': \(error)")
                    return .usage
                }
            }
        }
        settings.maxAge = arguments.maxAge
        settings.workers = arguments.workers
        settings.queueLimit = arguments.queue
        settings.memoryBudget = Int(arguments.memoryCache)
        let log: AccessLog
        do {
            log = try AccessLog(path: arguments.accessLog == "off" ? nil : arguments.accessLog, json: launch.json)
        } catch {
            launch.error(error.description)
            return .outputFailed
        }
        do {
            try launch.cache.prepareForStores()
        } catch {
            launch.error("the cache cannot be written: \(error)")
            return .cacheUnwritable
        }
        let service: ImageService
        do {
            service = try ImageService(settings: settings, template: FetchTemplate(
                cache: launch.cache, readOnlyCaches: launch.readOnlyCaches, settings: launch.settings,
                downloads: launch.downloads, environment: launch.environment))
        } catch {
            launch.error("cannot start the workers: \(error)")
            return .systemError
        }
        let server = ServerContext(service: service, log: log, maximumConnections: arguments.maxConnections)

        // Every connection is a descriptor: as many as the hard limit allows.
        var files = rlimit()
        if getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &files) == 0, files.rlim_cur < files.rlim_max {
            files.rlim_cur = files.rlim_max
            setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &files)
        }
        // Signals are taken on a queue of their own, never in a handler.
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGPIPE] { Glibc.signal(signal, SIG_IGN) }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, System.coreCount))
        let headerTimeout = TimeAmount.nanoseconds(Int64(arguments.headerTimeout * 1e9))
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderListSize = arguments.maxHeaderSize
        limits.maxHeaderFieldSize = arguments.maxHeaderSize
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 4096)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            // TCP_NODELAY is a TCP-level option: at the socket level it would be SO_DEBUG, which only root may set.
            .childChannelOption(ChannelOptions.tcpOption(.tcp_nodelay), value: 1)
            .childChannelOption(ChannelOptions.maxMessagesPerRead, value: 16)
            .childChannelInitializer { channel in
                guard server.connectionOpened() else { return channel.close() }
                return channel.eventLoop.makeCompletedFuture {
                    let state = ConnectionState()
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(ConnectionCounter(server: server))
                    try sync.addHandler(IdleStateHandler(readTimeout: headerTimeout))
                    try sync.addHandler(HeadDeadline(state: state, timeout: headerTimeout))
                    try sync.configureHTTPServerPipeline(position: .last, withPipeliningAssistance: true, withServerUpgrade: nil,
                                                         withErrorHandling: false, withOutboundHeaderValidation: true,
                                                         withEncoderConfiguration: .init(), withDecoderLimitConfiguration: limits)
                    try sync.addHandler(RequestHandler(server: server, state: state))
                }
            }

        var listeners: [Channel] = []
        func stop(_ status: ExitStatus) -> ExitStatus {
            for listener in listeners { try? listener.close().wait() }
            try? group.syncShutdownGracefully()
            service.close()
            return status
        }
        // Sockets systemd passed (socket activation), then those asked for.
        for descriptor in passedSockets(launch.environment) {
            do {
                listeners.append(try bootstrap.withBoundSocket(descriptor).wait())
            } catch {
                launch.error("cannot listen on the socket passed as descriptor \(descriptor): \(error)")
                return stop(.systemError)
            }
        }
        let addresses = arguments.listen.isEmpty && listeners.isEmpty ? ["127.0.0.1:8080"] : arguments.listen
        for address in addresses {
            do {
                listeners.append(try bind(bootstrap, address))
            } catch let problem as ListenProblem {
                launch.error(problem.description)
                return stop(.usage)
            } catch {
                launch.error("cannot listen on \(address): \(error)")
                return stop(.unavailable)
            }
        }
        for listener in listeners {
            launch.detail("listening on \(describe(listener.localAddress))")
            // Said even under -q's absence of notes: scripts and tests read the port chosen for :0.
            if launch.verbosity >= 0 {
                let line = "imgcache serve: listening on \(describe(listener.localAddress))\n"
                _ = line.withCString { Glibc.write(2, $0, strlen($0)) }
            }
        }

        let stopped = DispatchSemaphore(value: 0)
        let signalQueue = DispatchQueue(label: "imgcache-serve.signals")
        var sources: [DispatchSourceSignal] = []
        for signal in [SIGTERM, SIGINT] {
            let source = DispatchSource.makeSignalSource(signal: signal, queue: signalQueue)
            source.setEventHandler {
                guard !server.draining else { return }
                server.startDraining()
                stopped.signal()
            }
            source.resume()
            sources.append(source)
        }
        let hangUp = DispatchSource.makeSignalSource(signal: SIGHUP, queue: signalQueue)
        hangUp.setEventHandler {
            if let problem = log.reopen() {
                let line = "imgcache serve: warning: \(problem)\n"
                _ = line.withCString { Glibc.write(2, $0, strlen($0)) }
            }
        }
        hangUp.resume()
        sources.append(hangUp)

        stopped.wait()
        // Draining: no new connection; requests in flight are answered, within the grace time.
        for listener in listeners { try? listener.close().wait() }
        // Requests already sent on open connections are answered too (each answer then closes its
        // connection): the server ends once none has been in flight for a quarter of a second.
        let deadline = WallClock.monotonic() + arguments.grace
        var quietSince = WallClock.monotonic()
        while WallClock.monotonic() < deadline {
            if server.requestsInFlight > 0 || server.openConnections > 0 && server.service.metrics.requestCount != server.answeredAtLastLook {
                quietSince = WallClock.monotonic()
            }
            server.answeredAtLastLook = server.service.metrics.requestCount
            if WallClock.monotonic() - quietSince >= 0.25 { break }
            _ = stopped.wait(timeout: .now() + .milliseconds(20))
        }
        let unfinished = server.requestsInFlight
        if unfinished > 0 {
            let line = "imgcache serve: \(unfinished) request(s) still in flight after --grace; stopping\n"
            _ = line.withCString { Glibc.write(2, $0, strlen($0)) }
        }
        for listener in listeners where listener.localAddress?.protocol == .unix {
            if let path = listener.localAddress?.pathname { unlink(path) }
        }
        listeners.removeAll()
        try? group.syncShutdownGracefully()
        service.close()
        return .success
    }

    struct ListenProblem: Error {
        let description: String
    }

    /// Binds `address`: `unix:PATH`, `[V6]:PORT`, `HOST:PORT` or `:PORT` (every address).
    static func bind(_ bootstrap: ServerBootstrap, _ address: String) throws -> Channel {
        if address.hasPrefix("unix:") {
            let path = String(address.dropFirst(5))
            guard !path.isEmpty else { throw ListenProblem(description: "--listen \(address): no socket path after unix:") }
            return try bootstrap.bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true).wait()
        }
        guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]), (0...65_535).contains(port) else {
            throw ListenProblem(description: "--listen \(address): expected HOST:PORT, [IPV6]:PORT, :PORT or unix:PATH")
        }
        var host = String(address[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host.isEmpty { host = "0.0.0.0" }
        return try bootstrap.bind(host: host, port: port).wait()
    }

    static func describe(_ address: SocketAddress?) -> String {
        guard let address else { return "?" }
        switch address {
        case .v4: return "http://\(address.ipAddress ?? "?"):\(address.port ?? 0)"
        case .v6: return "http://[\(address.ipAddress ?? "?")]:\(address.port ?? 0)"
        case .unixDomainSocket: return "unix:\(address.pathname ?? "?")"
        }
    }

    /// The listening sockets systemd passed (`LISTEN_FDS` from descriptor 3, for this process).
    static func passedSockets(_ environment: Environment) -> [Int32] {
        guard let pid = environment["LISTEN_PID"].flatMap({ Int32($0) }), pid == getpid(),
              let count = environment["LISTEN_FDS"].flatMap({ Int32($0) }), count > 0, count < 1024 else { return [] }
        return (0..<count).map { 3 + $0 }
    }

    struct KeyProblem: Error, CustomStringConvertible {
        let description: String
    }

    static func keyPairs(_ launch: ServeLaunch) throws(KeyProblem) -> [URLSignature.Pair] {
        if let path = launch.arguments.keyFile {
            guard let bytes = try? FileSystem.readFile(path, limit: 1 << 20), let text = String(validating: bytes, as: UTF8.self) else {
                throw KeyProblem(description: "cannot read --key-file \(ControlCharacters.escaped(path))")
            }
            do {
                let pairs = try URLSignature.pairs(fileText: text)
                guard !pairs.isEmpty else { throw KeyProblem(description: "--key-file \(ControlCharacters.escaped(path)) holds no key") }
                return pairs
            } catch let problem as URLSignature.Problem {
                throw KeyProblem(description: "--key-file \(ControlCharacters.escaped(path)): \(problem)")
            } catch {
                throw error as! KeyProblem
            }
        }
        do {
            return try URLSignature.pairs(keys: launch.environment["IMGPROXY_KEY"], salts: launch.environment["IMGPROXY_SALT"])
        } catch {
            throw KeyProblem(description: "IMGPROXY_KEY and IMGPROXY_SALT: \(error)")
        }
    }

    static func signatureSize(_ environment: Environment) throws(KeyProblem) -> Int {
        guard let text = environment["IMGPROXY_SIGNATURE_SIZE"] else { return 32 }
        guard let size = Int(text), (1...32).contains(size) else {
            throw KeyProblem(description: "IMGPROXY_SIGNATURE_SIZE is \(text): expected 1 to 32 (bytes)")
        }
        return size
    }
}
