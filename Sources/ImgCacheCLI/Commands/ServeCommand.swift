#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCore
import Synchronization

/// `imgcache serve` arguments: where it listens, who may ask for what, and what it keeps.
public struct ServeArguments: Equatable, Sendable {
    /// `--listen`: `HOST:PORT`, `[V6]:PORT` or `unix:PATH`, each as given.
    public var listen: [String] = []
    public var keyFile: String?
    public var allowsUnsigned = false
    public var allowedSources: [String] = []
    public var allowsPrivateSources = false
    public var memoryCache: Int64 = 64 << 20
    /// Cache-Control max-age of images, in seconds.
    public var maxAge = 31_536_000
    public var presets: String?
    /// Seconds SIGTERM leaves requests in flight to finish.
    public var grace = 10.0
    public var maxConnections = 10_000
    /// Misses made at once: one per core (each decodes in a worker process of its own, under
    /// the per-image time limit, which more workers than cores would only share out).
    public var workers = max(2, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    /// `--max-time` when not given: a download for a request takes at most this long in all.
    public static let defaultMaximumTime = 30.0
    public var queue = 256
    /// `--access-log FILE` ('-': standard output, the default; 'off': none).
    public var accessLog = "-"
    /// Seconds a connection has to send a whole request head.
    public var headerTimeout = 10.0
    public var maxHeaderSize = 16_384
    public var manager = ManagerArguments()

    public init() {}
}

/// What the server program is handed to start with: the arguments, and the fetch setup the
/// command line resolved (settings, remote stores, decode limits) with its warnings said.
public struct ServeLaunch {
    public let arguments: ServeArguments
    public let cache: DiskCache
    public let readOnlyCaches: [ReadOnlyCache]
    public let settings: FetchSettings
    public let downloads: DownloadConfiguration
    public let environment: Environment
    public let json: Bool
    public let verbosity: Int
    /// Says an error, a warning or a detail on standard error, as every command does (on the
    /// thread that started the server: its console is not shared).
    public let error: (String) -> Void
    public let warning: (String) -> Void
    public let detail: (String) -> Void
}

/// Where `imgcache serve` runs the server: in the server program (which sets `run` before it
/// reads its command line), or, in imgcache itself, by starting that program, so that a
/// command-line run never loads the server's code.
public enum ServeProgram {
    private static let runner = Mutex<(@Sendable (ServeLaunch) -> ExitStatus)?>(nil)

    /// The server itself; set by the server program.
    public static func setRunner(_ run: @escaping @Sendable (ServeLaunch) -> ExitStatus) { runner.withLock { $0 = run } }
    static var run: (@Sendable (ServeLaunch) -> ExitStatus)? { runner.withLock { $0 } }

    /// The server program's name, looked for beside imgcache, then in ../libexec/imgcache.
    public static let name = "imgcache-serve"

    /// Where the server program is, or nil.
    static func find() -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        let executable = String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let slash = executable.lastIndex(of: "/") else { return nil }
        let folder = String(executable[..<slash])
        for candidate in [folder + "/" + name, folder + "/../libexec/imgcache/" + name] where access(candidate, X_OK) == 0 {
            return candidate
        }
        return nil
    }
}

/// `imgcache serve`: an image server over the cache.
typealias ServeCommand = CommandRun<ServeArguments>

extension ServeCommand {
    func run() throws(SystemError) -> ExitStatus {
        guard let serve = ServeProgram.run else { return startServerProgram() }
        var manager = arguments.manager
        manager.downloads.refusesPrivateAddresses = !arguments.allowsPrivateSources
        // A source trickling bytes would hold a worker for as long as its body may grow: a
        // download for a request gets 30 s in all unless told.
        if manager.settings.maximumTime == nil { manager.settings.maximumTime = ServeArguments.defaultMaximumTime }
        let fetcher: ImageFetcher
        switch ManagerSetup.fetcher(manager, cache: cache, console: console, environment: environment) {
        case .success(let made): fetcher = made
        case .failure(let status): return status
        }
        let launch = ServeLaunch(arguments: arguments, cache: cache, readOnlyCaches: fetcher.readOnlyCaches, settings: fetcher.settings,
                                 downloads: fetcher.downloaderConfiguration, environment: environment, json: globals.json,
                                 verbosity: console.verbosity,
                                 error: { [console] in console.error($0) }, warning: { [console] in console.warning($0) },
                                 detail: { [console] in console.detail($0) })
        fetcher.close()
        return serve(launch)
    }

    /// Replaces this process with the server program, its command line unchanged.
    private func startServerProgram() -> ExitStatus {
        guard let program = ServeProgram.find() else {
            console.error("serve needs \(ServeProgram.name), installed beside imgcache (or in ../libexec/imgcache); it is not there")
            return .unavailable
        }
        // The words as read, not the process's arguments: those have their secrets blanked
        // (-u's password, a --proxy's or --remote's), which the server must have whole. It blanks
        // its own arguments in turn.
        let words = ProcessArguments.firstRead ?? (1..<Int(CommandLine.argc)).map { CommandLine.unsafeArgv[$0].map { String(cString: $0) } ?? "" }
        var argv: [UnsafeMutablePointer<CChar>?] = [strdup(program)]
        for word in words { argv.append(strdup(word)) }
        argv.append(nil)
        execv(program, argv)
        console.error("cannot start \(program): \(String(cString: strerror(errno)))")
        return .unavailable
    }
}

extension ServeArguments: Subcommand {
    static let name = "serve"
    static let summary = "Serve images over HTTP from the cache, with imgproxy's URLs"
    static let spec = CommandSpec(
        name: name, summary: summary,
        description: """
            An image server over the namespace: GET or HEAD /SIGNATURE/OPTIONS/plain/SOURCE@EXT or \
            /SIGNATURE/OPTIONS/BASE64URL.EXT, as imgproxy reads them (options rs, s, rt, w, h, el, ex, \
            g, q, f, dpr, bg, sm, pr). The first request for a size downloads the original once and \
            makes the size from it; later sizes are made from the cached original; concurrent requests \
            for one size wait for one download and one encode. Without a format asked, the best the \
            request's Accept allows: AVIF, then WebP, else the source's own (Vary: Accept). Hot \
            variants are kept in memory (--memory-cache); answers carry ETag, Last-Modified and \
            Cache-Control, and If-None-Match gets a 304. Signatures are imgproxy's (IMGPROXY_KEY and \
            IMGPROXY_SALT, hex, comma-separated for several pairs; or --key-file) and required unless \
            --allow-unsigned. A source whose address is loopback, private, link-local, multicast or \
            unspecified, after DNS and every redirect, is refused (403) unless --allow-private-sources. \
            GET /health answers ok; GET /metrics, Prometheus text. One access-log line per request \
            (combined format; --json: JSON). SIGTERM stops accepting and ends once the requests in \
            flight are answered (at most --grace); SIGHUP reopens the access log. Docs/SERVE.md has \
            the whole reference.
            """,
        options: [
            .value(.listen, metavar: "ADDRESS", kind: .text, repeatable: true,
                   help: "Listen on HOST:PORT, [IPV6]:PORT or unix:PATH (repeatable; default 127.0.0.1:8080; with systemd's LISTEN_FDS, the sockets passed)"),
            .value(.keyFile, metavar: "FILE", kind: .path,
                   help: "Key and salt pairs, one 'KEY SALT' line each in hex, instead of IMGPROXY_KEY and IMGPROXY_SALT"),
            .flag(.allowUnsigned, help: "Take any signature segment (as imgproxy without a key): anyone may ask for any size"),
            .value(.allowSource, metavar: "PREFIX", kind: .text, repeatable: true,
                   help: "Fetch only sources starting with PREFIX (repeatable; '*' stands for any run but '/': https://*.example.com/)"),
            .flag(.allowPrivateSources, help: "Let sources reach loopback, private and link-local addresses"),
            .value(.memoryCache, metavar: "SIZE", kind: .text, help: "Bytes of hot variants kept in memory, least recently used out first (default 64M; 0: none)"),
            .value(.maxAge, metavar: "SECONDS", kind: .text, help: "Cache-Control max-age of images (default 1y; also 3600, 30d)"),
            .value(.presets, metavar: "FILE", kind: .path, help: "Presets for pr:NAME, one NAME=OPTION/OPTION line each; 'default' applies to every request"),
            .value(.grace, metavar: "SECONDS", kind: .text, help: "Time SIGTERM leaves requests in flight (default 10s)"),
            .value(.maxConnections, metavar: "N", kind: .text, help: "Client connections at once; more are closed as they come (default 10000)"),
            .value(.workers, metavar: "N", kind: .text, help: "Misses made at once: downloads and variants (default: the cores, at least 2)"),
            .value(.queue, metavar: "N", kind: .text, help: "Misses that may wait for a worker; beyond, 503 with Retry-After (default 256)"),
            .value(.accessLog, metavar: "FILE", kind: .path, help: "Where the access log goes ('-': standard output, the default; 'off': nowhere)"),
            .value(.headerTimeout, metavar: "SECONDS", kind: .text, help: "Time a connection has to send a whole request head, and to send the next when idle (default 10s)"),
            .value(.maxHeaderSize, metavar: "SIZE", kind: .text, help: "Largest request head; a larger one gets 431 (default 16k)"),
        ] + CommandTable.managerOptions.filter { [.maxPixels, .maxDecodeTime, .maxDecodeMemory, .verify, .readOnlyPath, .remote,
                                                   .remoteReshare, .keyFilter, .failedTtl, .retryFailed].contains($0.name) }
          + CommandTable.downloadOptions.filter { $0.name != .concurrency && $0.name != .deadline },
        operands: [],
        examples: [
            ("IMGPROXY_KEY=$KEY IMGPROXY_SALT=$SALT imgcache serve --listen 0.0.0.0:8080", "imgproxy's URLs, signed"),
            ("imgcache serve --allow-unsigned --allow-private-sources", "on loopback, for a local site"),
            ("curl -s localhost:8080/_/rs:fill:300:200/plain/https://example.com/a.jpg -o a.webp", "a size of an image"),
        ]
    )
    var scope: CommandScope { .fetching }

    static func invocation(_ options: ParsedOptions, globals: GlobalOptions) throws(UsageError) -> Invocation {
        .run(globals, Command(try options.serveArguments()))
    }

    static func run(_ command: ServeCommand) throws(SystemError) -> ExitStatus { try command.run() }
}

extension ParsedOptions {
    func serveArguments() throws(UsageError) -> ServeArguments {
        var arguments = ServeArguments()
        arguments.manager = try managerArguments(defaultPriority: .high)
        arguments.listen = values[.listen] ?? []
        for address in arguments.listen where address.isEmpty {
            throw .invalidValue(option: "--listen", value: address, reason: "expected HOST:PORT or unix:PATH")
        }
        arguments.keyFile = last(.keyFile)
        arguments.allowsUnsigned = has(.allowUnsigned)
        arguments.allowedSources = values[.allowSource] ?? []
        arguments.allowsPrivateSources = has(.allowPrivateSources)
        if let text = last(.memoryCache) {
            do { arguments.memoryCache = try ByteSize(parsing: text).bytes } catch {
                throw .invalidValue(option: "--memory-cache", value: text, reason: error.reason)
            }
        }
        if let text = last(.maxAge) {
            let span: TimeSpan
            do { span = try TimeSpan(parsing: text) } catch { throw .invalidValue(option: "--max-age", value: text, reason: error.reason) }
            arguments.maxAge = Int(span.seconds)
        }
        arguments.presets = last(.presets)
        if let text = last(.grace) { arguments.grace = try seconds(text, option: "--grace") }
        if let text = last(.headerTimeout) { arguments.headerTimeout = try seconds(text, option: "--header-timeout") }
        if let text = last(.maxConnections) { arguments.maxConnections = try integer(text, option: "--max-connections", in: 1...1_000_000) }
        if let text = last(.workers) { arguments.workers = try integer(text, option: "--workers", in: 1...256) }
        if let text = last(.queue) { arguments.queue = try integer(text, option: "--queue", in: 0...1_000_000) }
        if let text = last(.accessLog) { arguments.accessLog = text }
        if let text = last(.maxHeaderSize) {
            let size: Int64
            do { size = try ByteSize(parsing: text).bytes } catch { throw .invalidValue(option: "--max-header-size", value: text, reason: error.reason) }
            guard (1024...1 << 20).contains(size) else {
                throw .invalidValue(option: "--max-header-size", value: text, reason: "expected between 1k and 1M")
            }
            arguments.maxHeaderSize = Int(size)
        }
        return arguments
    }
}
