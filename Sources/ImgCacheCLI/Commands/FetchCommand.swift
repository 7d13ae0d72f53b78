#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCore

/// `imgcache fetch URL...`: each URL from the cache or the network, then its
/// path, a JSON line, or the image itself (`-o`).
struct FetchCommand {
    let arguments: FetchArguments
    let globals: GlobalOptions
    let cache: DiskCache
    let console: Console

    func run() throws(SystemError) -> ExitStatus {
        let fetcher = ManagerSetup.fetcher(arguments.manager, cache: cache, console: console)
        defer { fetcher.close() }
        ManagerSetup.watchSignals(fetcher, console: console)
        var progressLine: ProgressLine?
        if arguments.manager.settings.options.contains(.progressiveDownload) {
            let line = ProgressLine(console: console, onTerminal: console.standardError.isTerminal && !globals.quiet)
            progressLine = line
            fetcher.progress = { url, received, expected in line.show(url: url, received: received, expected: expected) }
        }
        var status = ExitStatus.success
        var interrupted = false
        try fetcher.fetch(arguments.urls) { (index, answer) throws(SystemError) in
            progressLine?.clear()
            let url = arguments.urls[index]
            let result: FetchResult
            switch answer {
            case .success(let fetched): result = fetched
            case .failure(let error):
                if case .interrupted = error { interrupted = true } else { console.error(error.message) }
                if globals.json { try console.output(ManagerSetup.errorJSON(url: url, error: error).serialized) }
                status = ManagerSetup.worse(status, ManagerSetup.exitStatus(for: error))
                return
            }
            if let output = arguments.output {
                do throws(SystemError) {
                    try write(result.path, to: output)
                } catch where output == "-" && error.code == EPIPE_CODE {
                    throw error
                } catch {
                    console.error("cannot write \(output == "-" ? "standard output" : output): \(error.reason)")
                    status = ManagerSetup.worse(status, .outputFailed)
                }
                if globals.json { try console.output(result.json.serialized) }
            } else if globals.json {
                try console.output(result.json.serialized)
            } else if !globals.quiet {
                try console.output(result.path)
            }
        }
        if interrupted || fetcher.interruption.signal != nil {
            return ManagerSetup.interruptedStatus(fetcher, console: console)
        }
        return status
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
/// signals, JSON error lines and exit statuses.
enum ManagerSetup {
    static func fetcher(_ arguments: ManagerArguments, cache: DiskCache, console: Console) -> ImageFetcher {
        let cwd = FileSystem.currentDirectory()
        let readOnly = arguments.readOnlyPaths.map { ReadOnlyCache(directory: $0.hasPrefix("/") ? $0 : cwd + "/" + $0) }
        let fetcher = ImageFetcher(cache: cache, readOnlyCaches: readOnly, settings: arguments.settings,
                                   downloaderConfiguration: arguments.downloads)
        if console.verbosity > 0 { fetcher.log = { [console] line in console.detail(line) } }
        if arguments.downloads.allowInvalidCertificates {
            console.warning("--insecure: TLS certificates and host names are not verified")
        }
        let ignored = arguments.settings.options.intersection(ImageOptions.withoutMeaning)
        if !ignored.isEmpty {
            console.detail("options without effect in a command-line tool: " + ignored.names.joined(separator: ", "))
        }
        return fetcher
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

    init(console: Console, onTerminal: Bool) {
        self.console = console
        self.onTerminal = onTerminal
    }

    func show(url: String, received: Int64, expected: Int64?) {
        var text = "\(RemoteURL.displayed(url)): \(ByteSize.humanised(received))"
        if let expected, expected > 0 {
            text += " of \(ByteSize.humanised(expected)) (\(min(100, received * 100 / expected))%)"
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
