#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCore

/// `imgcache fetch URL...` (or a list, `-i FILE`): each URL from the cache or
/// the network, then one line per URL in their order (its path, or an empty
/// line when it failed), a JSON line, or the image itself (`-o`).
typealias FetchCommand = CommandRun<FetchArguments>

extension FetchCommand {
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
        var progressLine: ProgressLine?
        // On a terminal a download shows its progress, as curl's does (unless -q);
        // elsewhere only with --progressive, as -v lines.
        let onTerminal = console.standardError.isTerminal && !globals.quiet
        if onTerminal || arguments.manager.settings.options.contains(.progressiveDownload) {
            let line = ProgressLine(console: console, onTerminal: onTerminal)
            progressLine = line
            fetcher.progress = { url, received, expected in line.show(url: url, received: received, expected: expected) }
        }
        var answers = AnswerPrinter(command: self, interruption: fetcher.interruption)
        // Added to the namespace's statistics once, however the run ends.
        defer { fetcher.appendStatistics(answers.statistics) }
        if let list {
            try fetcher.fetch(list, deliver: { (outcome) throws(SystemError) in
                progressLine?.clear()
                try answers.print(url: outcome.url, outcome.result ?? .failure(.interrupted(url: outcome.url)))
                // Each line as it is known, for readers of a pipe (a script's while-read loop).
                try console.standardOutput.flush()
            }, update: { (update) throws(SystemError) in
                if case .inputFailed(let error) = update {
                    console.error("cannot read the list of URLs: \(error)")
                    answers.status = ExitStatus.worse(answers.status, .noInput)
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
        /// Asked while an output FIFO waits for its reader: a signal stops the wait.
        let interruption: FetchInterruption

        init(command: FetchCommand, interruption: FetchInterruption) {
            self.command = command
            self.interruption = interruption
        }

        mutating func print(url: String, _ answer: Result<FetchResult, FetchError>) throws(SystemError) {
            statistics.count(answer)
            let console = command.console, globals = command.globals, arguments = command.arguments
            switch answer {
            case .success(let result):
                if let warning = result.staleWarning { console.warning(warning) }
                if let directory = arguments.outputDirectory {
                    let target = directory + "/" + FetchCommand.remoteName(url: url, cachedPath: result.path,
                                                                           format: result.metadata.format)
                    do throws(SystemError) {
                        try FileSystem.makeDirectories(directory, mode: 0o777, followingLinks: true)
                        try OutputFile.write(contentsOf: result.path, to: target, isCancelled: { [interruption] in interruption.signal != nil })
                    } catch {
                        console.error("cannot write \(ControlCharacters.escaped(target)): \(error.reason)")
                        status = ExitStatus.worse(status, .outputFailed)
                    }
                }
                if let output = arguments.output {
                    do throws(SystemError) {
                        if let mismatch = FetchCommand.formatMismatch(result, output: output) {
                            console.error(mismatch)
                            status = ExitStatus.worse(status, .outputFailed)
                        } else {
                            try command.write(result.path, to: output, isCancelled: { [interruption] in interruption.signal != nil })
                        }
                    } catch where output == "-" && error.errno == .brokenPipe {
                        throw error
                    } catch {
                        console.error("cannot write \(output == "-" ? "standard output" : output): \(error.reason)")
                        status = ExitStatus.worse(status, .outputFailed)
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
                default: console.error(error.commandLineMessage)
                }
                if case .cacheUnwritable = error { saidUnwritable = true }
                if globals.json { try console.output(ManagerSetup.errorJSON(url: url, error: error).serialized) }
                // Every URL keeps its line, so that the output lines up with the input (paste).
                else if arguments.output == nil { try printLine(url: url, path: "") }
                status = ExitStatus.worse(status, error.exitStatus)
            }
        }

        private func printLine(url: String, path: String) throws(SystemError) {
            let line = command.arguments.withURL ? RemoteURL.redacted(url) + "\t" + path : path
            try command.console.output(line)
        }
    }

    /// The file name `--output-dir` gives an image, as curl -O does: the
    /// last segment of the URL's path (without query or fragment); the cached
    /// file's name when that is empty or a dot name. The name carries the
    /// extension of the bytes' `format`: one naming another format is
    /// replaced (`a.jpg` holding PNG bytes is `a.png`), any other kept and
    /// the right one added (`avatar` is `avatar.png`).
    static func remoteName(url: String, cachedPath: String, format: ImageFormat?) -> String {
        let path = url.prefix { $0 != "?" && $0 != "#" }
        let afterScheme = path.firstRange(of: "://").map { path[$0.upperBound...] } ?? path[...]
        let segments = afterScheme.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        let name = String(segments.last ?? "")
        guard !name.isEmpty, name != ".", name != "..", !name.contains("\0") else {
            return String(cachedPath.split(separator: "/").last ?? "image")
        }
        guard let format else { return name }
        if let named = ImageFormat(namedBy: name) {
            if named == format { return name }
            return String(name[..<name.lastIndex(of: ".")!]) + "." + format.fileExtension
        }
        return name + "." + format.fileExtension
    }

    /// Why the image cannot go to `output` as it is: the file's name asks for
    /// another format than the image's (never written with the wrong bytes).
    static func formatMismatch(_ result: FetchResult, output: String) -> String? {
        guard output != "-", let named = ImageFormat(namedBy: output), let format = result.metadata.format, named != format else { return nil }
        let convert = ImageEncoder.writableFormats.contains(named) ? ", or add --format \(named.rawValue) to convert it" : ""
        return "\(ControlCharacters.escaped(output)): not written: the image is \(format.displayName) but the name says "
            + "\(named.displayName); name it .\(format.fileExtension)\(convert)"
    }

    private func write(_ path: String, to output: String, isCancelled: () -> Bool) throws(SystemError) {
        if output == "-" {
            try console.standardOutput.flush()
            try FileSystem.copy(path, to: 1, destinationName: "standard output")
        } else {
            try OutputFile.write(contentsOf: path, to: output, isCancelled: isCancelled)
        }
    }
}

extension FetchArguments: Subcommand {
    static var spec: CommandSpec { CommandTable.fetch }
    var scope: CommandScope { .fetching }

    static func invocation(_ options: ParsedOptions, globals: GlobalOptions) throws(UsageError) -> Invocation {
        .run(globals, Command(try options.fetchArguments(globals: globals)))
    }

    static func run(_ command: FetchCommand) throws(SystemError) -> ExitStatus { try command.run() }
}
