#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCore

/// `imgcache fetch URL...` (or a list, `-i FILE`): each URL from the cache or
/// the network, then one line per URL in their order (its path, or an empty
/// line when it failed), a JSON line, or the image itself (`-o`).
struct FetchCommand {
    let arguments: FetchArguments
    let globals: GlobalOptions
    let cache: DiskCache
    let console: Console
    let environment: Environment

    func run() throws(SystemError) -> ExitStatus {
        var list: URLList?
        if let input = arguments.input {
            guard let opened = ManagerSetup.openList(input, console: console, quiet: globals.quiet) else { return .noInput }
            list = opened
        }
        let fetcher: ImageFetcher
        switch ManagerSetup.fetcher(arguments.manager, cache: cache, console: console, environment: environment) {
        case .success(let made): fetcher = made
        case .failure(let status): return status
        }
        defer { fetcher.close() }
        ManagerSetup.watchSignals(fetcher, console: console)
        var progressLine: ProgressLine?
        // On a terminal a download shows its progress, as curl's does (unless -q);
        // elsewhere only with --progressive, as -v lines.
        let onTerminal = console.standardError.isTerminal && !globals.quiet
        if onTerminal || arguments.manager.settings.options.contains(.progressiveDownload) {
            let line = ProgressLine(console: console, onTerminal: onTerminal)
            progressLine = line
            fetcher.progress = { url, received, expected in line.show(url: url, received: received, expected: expected) }
        }
        var answers = AnswerPrinter(command: self)
        // Added to the namespace's statistics once, however the run ends.
        defer { fetcher.appendStatistics(answers.statistics) }
        if let list {
            let window = ManagerSetup.readAhead(arguments.manager)
            try fetcher.fetch(list, window: window, deliver: { (outcome) throws(SystemError) in
                progressLine?.clear()
                try answers.print(url: outcome.url, outcome.result ?? .failure(.interrupted(url: outcome.url)))
                // Each line as it is known, for readers of a pipe (a script's while-read loop).
                try console.standardOutput.flush()
            }, update: { (update) throws(SystemError) in
                if case .inputFailed(let error) = update {
                    console.error("cannot read the list of URLs: \(error)")
                    answers.status = ManagerSetup.worse(answers.status, .noInput)
                }
            })
        } else {
            try fetcher.fetch(arguments.urls) { (index, answer) throws(SystemError) in
                progressLine?.clear()
                try answers.print(url: arguments.urls[index], answer)
            }
        }
        if answers.interrupted || fetcher.interruption.signal != nil {
            return ManagerSetup.interruptedStatus(fetcher, console: console)
        }
        return answers.status
    }

    /// Prints each answer as it comes, and keeps the exit status.
    private struct AnswerPrinter {
        let command: FetchCommand
        var status = ExitStatus.success
        var interrupted = false
        var statistics = UsageStatistics()
        /// A cache that cannot be written fails every URL for one reason: said once.
        private var saidUnwritable = false

        init(command: FetchCommand) {
            self.command = command
        }

        mutating func print(url: String, _ answer: Result<FetchResult, FetchError>) throws(SystemError) {
            statistics.count(answer)
            let console = command.console, globals = command.globals, arguments = command.arguments
            switch answer {
            case .success(let result):
                if let directory = arguments.outputDirectory {
                    let target = directory + "/" + FetchCommand.remoteName(url: url, cachedPath: result.path)
                    do throws(SystemError) {
                        try FileSystem.makeDirectories(directory)
                        try FileSystem.copyAtomically(result.path, to: target)
                    } catch {
                        console.error("cannot write \(ControlCharacters.escaped(target)): \(error.reason)")
                        status = ManagerSetup.worse(status, .outputFailed)
                    }
                }
                if let output = arguments.output {
                    do throws(SystemError) {
                        if let mismatch = FetchCommand.formatMismatch(result, output: output) {
                            console.error(mismatch)
                            status = ManagerSetup.worse(status, .outputFailed)
                        } else {
                            try command.write(result.path, to: output)
                        }
                    } catch where output == "-" && error.errno == .brokenPipe {
                        throw error
                    } catch {
                        console.error("cannot write \(output == "-" ? "standard output" : output): \(error.reason)")
                        status = ManagerSetup.worse(status, .outputFailed)
                    }
                    if globals.json { try console.output(result.json.serialized) }
                } else if globals.json {
                    try console.output(result.json.serialized)
                } else {
                    try printLine(url: url, path: result.path)
                }
            case .failure(let error):
                switch error {
                case .interrupted: interrupted = true
                case .cacheUnwritable where saidUnwritable: break
                default: console.error(error.message)
                }
                if case .cacheUnwritable = error { saidUnwritable = true }
                if globals.json { try console.output(ManagerSetup.errorJSON(url: url, error: error).serialized) }
                // Every URL keeps its line, so that the output lines up with the input (paste).
                else if arguments.output == nil { try printLine(url: url, path: "") }
                status = ManagerSetup.worse(status, ManagerSetup.exitStatus(for: error))
            }
        }

        private func printLine(url: String, path: String) throws(SystemError) {
            let line = command.arguments.withURL ? RemoteURL.redacted(url) + "\t" + path : path
            try command.console.output(line)
        }
    }

    /// The file name `--output-dir` gives an image, as curl -O does: the
    /// last segment of the URL's path (without query or fragment); the cached
    /// file's name when that is empty or a dot name.
    static func remoteName(url: String, cachedPath: String) -> String {
        let path = url.prefix { $0 != "?" && $0 != "#" }
        let afterScheme = path.firstRange(of: "://").map { path[$0.upperBound...] } ?? path[...]
        let segments = afterScheme.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        let name = String(segments.last ?? "")
        guard !name.isEmpty, name != ".", name != "..", !name.contains("\0") else {
            return String(cachedPath.split(separator: "/").last ?? "image")
        }
        return name
    }

    /// Why the image cannot go to `output` as it is: the file's name asks for
    /// another format than the image's (never written with the wrong bytes).
    static func formatMismatch(_ result: FetchResult, output: String) -> String? {
        guard output != "-", let named = ImageFormat(namedBy: output), let format = result.metadata.format, named != format else { return nil }
        let convert = ImageEncoder.writableFormats.contains(named) ? ", or add --format \(named.rawValue) to convert it" : ""
        return "\(ControlCharacters.escaped(output)): not written: the image is \(format.displayName) but the name says "
            + "\(named.displayName); name it .\(format.fileExtension)\(convert)"
    }

    private func write(_ path: String, to output: String) throws(SystemError) {
        if output == "-" {
            try console.standardOutput.flush()
            try FileSystem.copy(path, to: 1, destinationName: "standard output")
        } else {
            try FileSystem.copyAtomically(path, to: output)
        }
    }
}

/// What fetch and prefetch share: building the fetcher from the arguments,
/// reading a list, signals, JSON error lines and exit statuses.
enum ManagerSetup {
    /// URLs read ahead of the answers, per download slot.
    static let readAheadPerSlot = 16

    /// How many URLs of a list are read ahead of the answers.
    static func readAhead(_ arguments: ManagerArguments) -> Int {
        max(256, arguments.downloads.maximumConcurrentDownloads * readAheadPerSlot)
    }

    /// The list at `path` ("-": standard input), or nil after saying why it
    /// cannot be read. Its descriptor stays open until the process ends: the
    /// reader thread may still be in read() when a run is interrupted.
    static func openList(_ path: String, console: Console, quiet: Bool) -> URLList? {
        guard path != "-" else {
            if console.standardError.isTerminal, isatty(0) == 1, !quiet {
                console.note("reading URLs from standard input, one per line; end with Ctrl-D")
            }
            return URLList(descriptor: 0, name: "standard input")
        }
        do {
            return try URLList.open(path: path)
        } catch {
            console.error("cannot read the list of URLs: \(error.errno == .isDirectory ? path + " is a directory" : error.description)")
            return nil
        }
    }

    /// The manager for a run, or the status to exit with after saying why
    /// there is none (a bad IMGCACHE_REMOTE, remotes that cannot be remembered).
    static func fetcher(_ arguments: ManagerArguments, cache: DiskCache, console: Console,
                        environment: Environment) -> Result<ImageFetcher, ExitStatus> {
        let cwd = FileSystem.currentDirectory()
        let readOnly = arguments.readOnlyPaths.map { ReadOnlyCache(directory: $0.hasPrefix("/") ? $0 : cwd + "/" + $0) }
        var settings = arguments.settings
        if arguments.asksPassword, let user = settings.credentials?.user {
            guard let password = PasswordPrompt.ask(user: user) else {
                // The value is not repeated: it may be a password typed without its user.
                console.error("-u was given a user without a password, and there is no terminal to ask it on")
                console.plain("give -u USER:PASSWORD, or --netrc-file FILE")
                return .failure(.usage)
            }
            settings.credentials = Credentials(user: user, password: password)
        }
        switch remotes(arguments, cache: cache, console: console, environment: environment) {
        case .success(let remotes): settings.remotes = remotes
        case .failure(let status): return .failure(status)
        }
        let fetcher = ImageFetcher(cache: cache, readOnlyCaches: readOnly, settings: settings,
                                   downloaderConfiguration: arguments.downloads, environment: environment)
        if console.verbosity > 0 { fetcher.log = { [console] line in console.detail(line) } }
        fetcher.warn = { [console] line in console.warning(line) }
        if console.verbosity > 0, !settings.remotes.isEmpty {
            console.detail("remote stores: " + settings.remotes.map(\.description).joined(separator: ", "))
        }
        if arguments.downloads.allowInvalidCertificates {
            console.warning("--insecure: TLS certificates and host names are not verified")
        }
        let ignored = arguments.settings.options.intersection(ImageOptions.withoutMeaning)
        if !ignored.isEmpty {
            console.detail("options without effect in a command-line tool: " + ignored.names.joined(separator: ", "))
        }
        return .success(fetcher)
    }

    /// The remote stores for a run: `--remote` (saved with `--remember`), else
    /// `IMGCACHE_REMOTE` (space-separated), else the namespace's remembered ones.
    static func remotes(_ arguments: ManagerArguments, cache: DiskCache, console: Console,
                        environment: Environment) -> Result<[RemoteSpec], ExitStatus> {
        if let given = arguments.remotes {
            guard arguments.remember else { return .success(given) }
            var settings = NamespaceSettings.load(from: cache.directory)
            settings.remotes = given.map(\.text)
            do {
                try cache.prepareForStores()
                try settings.save(to: cache.directory)
            } catch {
                console.error("cannot remember the remote stores: \(error)")
                return .failure(.cacheUnwritable)
            }
            console.note(given.isEmpty ? "remembered: no remote store for namespace '\(cache.location.namespace)'"
                         : "remembered for namespace '\(cache.location.namespace)': " + given.map(\.description).joined(separator: " "))
            return .success(given)
        }
        do {
            let selection = try RemoteSelection.resolve(given: nil, environment: environment, namespaceDirectory: cache.directory)
            for (text, reason) in selection.unreadable { console.warning("ignoring the remembered remote '\(text)': \(reason)") }
            return .success(selection.remotes)
        } catch {
            console.error("invalid IMGCACHE_REMOTE: \(error)")
            console.plain("each remote is a URL with optional |attributes, separated by spaces; see 'imgcache help fetch'")
            return .failure(.usage)
        }
    }

    /// Once the run starts threads (a run of hits never does), SIGINT and
    /// SIGTERM stop it instead of killing the process.
    static func watchSignals(_ fetcher: ImageFetcher, console: Console) {
        let interruption = fetcher.interruption
        fetcher.beforeFirstThread = {
            do {
                try SignalWatcher.start { signal in interruption.interrupt(signal: signal) }
            } catch {
                console.warning("cannot watch for SIGINT: \(error); an interruption may leave temporary files for clean")
            }
        }
    }

    /// The status for a run stopped by a signal, after saying so.
    static func interruptedStatus(_ fetcher: ImageFetcher, console: Console) -> ExitStatus {
        let signal = fetcher.interruption.signal ?? SIGINT
        console.error("interrupted by \(signal == SIGTERM ? "SIGTERM" : "SIGINT"); transfers aborted")
        return signal == SIGTERM ? .terminated : .interrupted
    }

    static func errorJSON(url: String, error: FetchError) -> JSONObject {
        var object = JSONObject()
        object.add("url", RemoteURL.redacted(url))
        object.add("error", error.message)
        if case .blacklisted = error { object.add("blacklisted", true) } else { object.add("blacklisted", false) }
        return object
    }

    /// A cache that cannot be written outranks a URL that failed: it fails them all.
    static func worse(_ a: ExitStatus, _ b: ExitStatus) -> ExitStatus {
        let rank: [ExitStatus] = [.success, .someFailed, .noInput, .outputFailed, .unavailable, .cacheUnwritable]
        return (rank.firstIndex(of: a) ?? 0) >= (rank.firstIndex(of: b) ?? 0) ? a : b
    }

    static func exitStatus(for error: FetchError) -> ExitStatus {
        switch error {
        case .cacheUnwritable: return .cacheUnwritable
        case .libraryMissing: return .unavailable
        default: return .someFailed
        }
    }
}

/// fetch --progressive: the bytes received so far, on the status line of a
/// terminal, or as -v lines elsewhere.
final class ProgressLine {
    private let console: Console
    private let onTerminal: Bool
    /// When each URL's first bytes were reported, for its rate.
    private var started: [String: Double] = [:]

    init(console: Console, onTerminal: Bool) {
        self.console = console
        self.onTerminal = onTerminal
    }

    /// `URL: 3.2 MB of 10.0 MB (32%)  1.1 MB/s  0:06 left`, as curl's meter says it.
    func show(url: String, received: Int64, expected: Int64?) {
        let now = WallClock.monotonic()
        let since = started[url] ?? now
        if started[url] == nil { started[url] = now }
        var text = "\(RemoteURL.displayed(url)): \(ByteSize.humanised(received))"
        if let expected, expected > 0 {
            text += " of \(ByteSize.humanised(expected)) (\(min(100, received * 100 / expected))%)"
        }
        let elapsed = now - since
        if elapsed >= 0.5, received > 0 {
            let rate = Double(received) / elapsed
            text += "  \(ByteSize.humanised(Int64(rate)))/s"
            if let expected, expected > received { text += "  " + ProgressBar.clock(Double(expected - received) / rate) + " left" }
        }
        if onTerminal {
            console.showStatus(String(text.suffix(max(10, console.terminalWidth - 1))))
        } else {
            console.detail(text)
        }
    }

    func clear() {
        if onTerminal { console.clearStatus() }
    }
}
