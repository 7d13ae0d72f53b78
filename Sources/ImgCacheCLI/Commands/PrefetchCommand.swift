#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCore

/// `imgcache prefetch` arguments.
public struct PrefetchArguments: Equatable, Sendable {
    /// The list's path; nil or "-" is standard input.
    public var input: String?
    /// Lists read after `input`, in turn, as one list (each its own table, with its own header).
    public var moreInputs: [String] = []
    public var showProgress = true
    /// How the list is written, where the command line says.
    public var listFormat = ListFormat.Choice()
    /// `--shard I/N`: this machine's part of the list.
    public var shard: ListShard?
    /// `--stats FILE`: where the run's numbers go, as JSON.
    public var statsFile: String?
    /// `--html-report FILE`: a contact sheet of the run's images and failures.
    public var htmlReport: String?
    public var manager = ManagerArguments()

    public init(input: String? = nil) {
        self.input = input
    }
}

/// `imgcache prefetch [FILE|-]`: warm the cache from a list of URLs, with a
/// progress bar on a terminal and a summary at the end.
typealias PrefetchCommand = CommandRun<PrefetchArguments>

extension PrefetchCommand {
    func run() throws(SystemError) -> ExitStatus {
        // A --stats file that cannot be written is said before the run, not after it.
        if let path = arguments.statsFile, let problem = RequestFiles.unwritable(path) {
            console.error("cannot write --stats \(path): \(problem)")
            return .outputFailed
        }
        if let path = arguments.htmlReport, let problem = RequestFiles.unwritable(path) {
            console.error("cannot write --html-report \(path): \(problem)")
            return .outputFailed
        }
        // A report written over a list the run reads would lose the list.
        let lists = [arguments.input ?? "-"] + arguments.moreInputs
        for (option, path) in [("--stats", arguments.statsFile), ("--html-report", arguments.htmlReport)] {
            guard let path, let list = lists.first(where: { RequestFiles.isSameFile($0, path) }) else { continue }
            let named = list == "-" ? "the list the run reads on standard input" : "the list " + ControlCharacters.escaped(list) + " the run reads"
            console.error("\(option) \(ControlCharacters.escaped(path)) is \(named): give another file")
            return .usage
        }
        // Both reports into one file: the second would replace the first.
        if let stats = arguments.statsFile, let report = arguments.htmlReport, stats == report || RequestFiles.isSameFile(stats, report) {
            console.error("--stats and --html-report are both \(ControlCharacters.escaped(stats)): give each a file of its own")
            return .usage
        }
        // What the report shows: each image as the run answered it, each failure and why.
        var reported: [ContactSheetPage.Item] = []
        var reportedFailures: [(url: String, reason: String, at: Double?)] = []
        // The list's descriptor stays open until the process ends: the reader
        // thread may still be in read() when the run is interrupted.
        guard let list = ManagerSetup.openLists([arguments.input ?? "-"] + arguments.moreInputs, format: arguments.listFormat, console: console,
                                                quiet: globals.quiet) else {
            return .noInput
        }
        let fetcher: ImageFetcher
        var manager = arguments.manager
        manager.settings.shard = arguments.shard
        switch ManagerSetup.fetcher(manager, cache: cache, console: console, environment: environment) {
        case .success(let made): fetcher = made
        case .failure(let status): return status
        }
        defer { fetcher.close() }

        let showsProgress = arguments.showProgress && !globals.quiet && console.standardError.isTerminal
        let bar = showsProgress ? ProgressBar(console: console) : nil
        if let bar { fetcher.progress = { url, received, _ in bar.received(received, url: url) } }
        defer { bar?.finish() }
        var summary = PrefetchSummary()
        var statistics = UsageStatistics()
        // Added to the namespace's statistics once, however the run ends.
        defer { fetcher.appendStatistics(statistics) }
        var inputError: SystemError?
        var inputStatus = ExitStatus.noInput
        var runStatistics = RunStatistics()
        let started = WallClock.monotonic()
        try fetcher.prefetch(list) { (update) throws(SystemError) in
            switch update {
            case .answered(let outcome):
                let row = list.rows.take(outcome.index)
                summary.count(outcome)
                if arguments.statsFile != nil { runStatistics.count(outcome) }
                if let result = outcome.result { statistics.count(result) }
                if arguments.htmlReport != nil { PrefetchCommand.record(outcome, items: &reported, failures: &reportedFailures) }
                var failed = false
                if case .success(let fetched)? = outcome.result, let warning = fetched.staleWarning { console.warning(warning) }
                if case .failure(let error)? = outcome.result {
                    failed = true
                    switch error {
                    // Said once, when the disk filled, and counted in the summary.
                    case .interrupted, .cacheFull: break
                    case .libraryMissing where summary.unavailable > 1, .downloaderUnavailable where summary.unavailable > 1,
                         .requestFileUnusable where summary.unavailable > 1: break  // said once
                    case .cacheUnwritable where summary.unwritable > 1: break  // said once
                    // Said with the URL it stopped (its message is the cache's, not the URL's).
                    case .cacheUnwritable: console.error(RemoteURL.displayed(outcome.url) + ": " + error.commandLineMessage)
                    default: console.error(error.commandLineMessage)
                    }
                }
                if let bar, let result = outcome.result {
                    var downloaded: Int64?
                    if case .success(let fetched) = result { downloaded = fetched.downloadedByteCount }
                    bar.answered(url: URLText.withoutFragment(outcome.url), downloadedBytes: downloaded)
                }
                bar?.advance(failed: failed)
                guard globals.json else { return }
                guard let result = outcome.result else {
                    // A table's row that repeats an earlier row's URL is answered too, by that row's answer
                    // (a row left to another shard is that shard's to answer).
                    if let row, !outcome.otherShard {
                        var repeated = JSONObject()
                        repeated.add("url", RemoteURL.redacted(outcome.url))
                        repeated.add("repeat", true)
                        try console.output(repeated.with(row: row).serialized)
                        try console.standardOutput.flush()
                    }
                    return
                }
                switch result {
                case .success(let fetched): try console.output(fetched.json.with(row: row).serialized)
                case .failure(let error): try console.output(ManagerSetup.errorJSON(url: outcome.url, error: error).with(row: row).serialized)
                }
                // Each line as it is known, for readers of a pipe (jq, a script's while-read loop).
                try console.standardOutput.flush()
            case .length(let count):
                bar?.setTotal(count)
            case .inputFailed(let error):
                inputError = error
                inputStatus = ManagerSetup.reportInputFailure(error, console: console)
            case .idle:
                bar?.draw()
            }
        }
        bar?.finish()
        if let path = arguments.statsFile {
            let object = runStatistics.json(summary, remotes: fetcher.remoteStatistics, seconds: WallClock.monotonic() - started,
                                            interrupted: fetcher.interruption.signal != nil || fetcher.reachedDeadline)
            do { try OutputFile.write(bytes: Array((object.serialized + "\n").utf8), to: path) } catch {
                console.error("cannot write --stats \(path): \(error.reason)")
                summary.failedOutput = true
            }
        }
        if let path = arguments.htmlReport {
            var page = ""
            let summaryLine = "\(Plural.count(reported.count, "image")); \(Plural.count(reportedFailures.count, "failed URL"))"
            let made = try ContactSheet(cache: cache, console: console, environment: environment)
                .write(title: "imgcache prefetch " + ([arguments.input ?? "-"] + arguments.moreInputs).joined(separator: " "), items: reported, failures: reportedFailures,
                       summary: summaryLine) { (chunk) throws(SystemError) in page += chunk }
            do { try OutputFile.write(bytes: Array(page.utf8), to: path) } catch {
                console.error("cannot write --html-report \(path): \(error.reason)")
                summary.failedOutput = true
            }
            if made != .success { summary.failedOutput = true }
        }
        // A list refused before any line of it was read has no run to sum up (but for --json, whose last line is always the summary).
        if globals.json || inputError == nil || summary.urls + summary.repeats + summary.otherShards > 0 {
            try report(summary, remotes: fetcher.settings.remotes.isEmpty ? nil : fetcher.remoteStatistics,
                       seconds: WallClock.monotonic() - started, interrupted: fetcher.interruption.signal != nil,
                       complete: inputError == nil)
        }
        if fetcher.interruption.signal != nil { return ManagerSetup.interruptedStatus(fetcher, console: console) }
        let status = summary.failedOutput ? ExitStatus.worse(summary.status, .outputFailed) : summary.status
        return inputError == nil ? status : .worse(status, inputStatus)
    }

    /// Keeps what `--html-report` shows of `outcome`: the image as answered, or the failure and why.
    static func record(_ outcome: FetchOutcome, items: inout [ContactSheetPage.Item],
                       failures: inout [(url: String, reason: String, at: Double?)]) {
        switch outcome.result {
        case .success(let fetched)?:
            let shown = fetched.metadata.uprightSize
            items.append(ContactSheetPage.Item(url: RemoteURL.redacted(outcome.url), format: fetched.metadata.format, width: shown.width,
                                               height: shown.height, frames: fetched.metadata.frameCount,
                                               bytes: fetched.originalByteCount ?? fetched.metadata.byteCount, lastUse: nil))
        case .failure(let error)?:
            if case .interrupted = error { return }
            let url = RemoteURL.redacted(outcome.url), message = error.commandLineMessage
            let prefix = RemoteURL.displayed(outcome.url) + ": "
            failures.append((url, message.hasPrefix(prefix) ? String(message.dropFirst(prefix.count)) : message, WallClock.now()))
        case nil:
            break
        }
    }

    /// The summary line (or JSON object); `remotes` is nil when the run had no remote store.
    private func report(_ summary: PrefetchSummary, remotes: RemoteStatistics?, seconds: Double,
                        interrupted: Bool, complete: Bool) throws(SystemError) {
        if globals.json {
            var object = JSONObject()
            object.add("summary", true)
            object.add("urls", summary.urls)
            object.add("downloaded", summary.downloaded)
            object.add("refreshed", summary.refreshed)
            object.add("cached", summary.cached)
            object.add("stale", summary.stale)
            object.add("remote", summary.fromRemotes)
            object.add("remote_writes", remotes?.writes ?? 0)
            object.add("remote_errors", remotes?.errors ?? 0)
            object.add("failed", summary.failed)
            object.add("blacklisted", summary.blacklisted)
            object.add("interrupted", summary.interrupted)
            object.add("not_tried", summary.notTried)
            object.add("repeats", summary.repeats)
            object.add("other_shards", summary.otherShards)
            object.add("complete", summary.allCached && !interrupted && complete)
            object.add("seconds", JSONValue.number((seconds * 1000).rounded() / 1000))
            try console.output(object.serialized)
            return
        }
        guard !globals.quiet else { return }
        var parts = ["\(summary.downloaded) downloaded"]
        if summary.refreshed > 0 { parts.append("\(summary.refreshed) refreshed") }
        if remotes != nil || summary.fromRemotes > 0 { parts.append("\(summary.fromRemotes) from remote") }
        parts.append("\(summary.cached) already cached")
        if summary.stale > 0 { parts.append("\(summary.stale) stale") }
        parts.append("\(summary.failed) failed")
        parts.append("\(summary.blacklisted) blacklisted")
        if summary.interrupted > 0 || interrupted { parts.append("\(summary.interrupted) interrupted") }
        if summary.notTried > 0 { parts.append("\(summary.notTried) not tried (the cache's disk is full)") }
        var line = "\(Plural.count(summary.urls, "URL")): " + parts.joined(separator: ", ")
        if summary.repeats > 0 { line += "; \(Plural.count(summary.repeats, "repeated line")) skipped" }
        if summary.otherShards > 0 { line += "; \(summary.otherShards) left to other shards" }
        if let remotes {
            line += "; \(Plural.count(remotes.writes, "remote write"))"
            if remotes.errors > 0 { line += ", \(Plural.count(remotes.errors, "remote error"))" }
        }
        let tenths = Int((seconds * 10).rounded())
        line += " (\(tenths / 10).\(tenths % 10) s)"
        try console.output(line)
    }
}

extension PrefetchArguments: Subcommand {
    /// The command's name and one-line summary, apart from its table: a run finds its command, and
    /// `help` lists them all, without building every command's table.
    static let name = "prefetch"
    static let summary = "Warm the cache from a list of URLs"
    static let spec = CommandSpec(
        name: name, summary: summary,
        description: """
            Reads URLs from FILE, or standard input when FILE is '-' or absent: one per line \
            (blank lines and lines starting with '#' are skipped), or a CSV, TSV or JSONL table \
            with a URL column (--input-format, --url-column; gzipped too), each row's other \
            columns carried into its JSON line. Work starts while the list is \
            still being read, and memory stays flat however long it is. Each distinct URL is \
            looked up and, if missing, downloaded (low priority unless --priority says \
            otherwise), checked and stored, as fetch does; repeats are skipped. On a terminal, \
            a progress bar on standard error. At the end a summary: URLs, downloaded, already \
            cached, failed, skipped as failed before (blacklisted). With --json, one JSON line \
            per distinct URL (per row, for a table: each carries its row's columns) as it finishes, \
            then a summary line. Exit 0 only when every URL \
            was found in the cache or stored. SIGINT or SIGTERM stops it: transfers are aborted, \
            their temporary files removed, and the summary so far is printed.
            """,
        options: [
            .flag(.noProgress, help: "No progress bar, even on a terminal"),
            .value(.stats, metavar: "FILE", kind: .path,
                   help: "Write the run's numbers to FILE as JSON when it ends: outcomes, failures by kind, bytes, each host's downloads and failures, time"),
            .value(.htmlReport, metavar: "FILE", kind: .path,
                   help: "Write a contact sheet of the run to FILE when it ends: one static page with each image's thumbnail (made through the variant cache), URL, format, size and bytes, then the failed URLs and why"),
            .value(.shard, metavar: "I/N", kind: .text,
                   help: "Fetch only part I (from 0) of N of the list, split by cache key the same way on every machine: N machines with I = 0 to N-1 share one list"),
        ] + CommandTable.listOptions + CommandTable.managerOptions + CommandTable.downloadOptions,
        operands: [OperandSpec(name: "FILE", kind: .path,
                               help: "list of URLs, one per line ('-': standard input); several are read in turn as one list, each table with its own header",
                               minimum: 0, maximum: nil)],
        examples: [
            ("imgcache prefetch urls.txt", "warm the cache, with a progress bar"),
            ("grep -o 'https://[^\"]*\\.jpg' page.html | imgcache prefetch -j 12", "from a pipe"),
            ("imgcache --json prefetch urls.txt | jq -r 'select(.error) | .url'", "the URLs that failed"),
            ("imgcache -q prefetch --retry-failed urls.txt || echo some failed", "in a script"),
        ]
    )
    var scope: CommandScope { .fetching }
    var looksUpMany: Bool { true }

    static func invocation(_ options: ParsedOptions, globals: GlobalOptions) throws(UsageError) -> Invocation {
        .run(globals, Command(try options.prefetchArguments()))
    }

    static func run(_ command: PrefetchCommand) throws(SystemError) -> ExitStatus { try command.run() }
}

/// `prefetch` arguments from the parsed words.
extension ParsedOptions {
    func prefetchArguments() throws(UsageError) -> PrefetchArguments {
        var arguments = PrefetchArguments(input: operands.first)
        arguments.moreInputs = Array(operands.dropFirst())
        if operands.contains("") { throw .invalidValue(option: "FILE", value: "", reason: "the path is empty") }
        if operands.count > 1, operands.filter({ $0 == "-" }).count > 1 {
            throw .invalidValue(option: "FILE", value: "-", reason: "standard input can be read once")
        }
        arguments.showProgress = !has(.noProgress)
        arguments.listFormat = try listFormat()
        if let path = last(.stats) {
            guard !path.isEmpty else { throw .invalidValue(option: "--stats", value: path, reason: "the path is empty") }
            arguments.statsFile = path
        }
        if let path = last(.htmlReport) {
            guard !path.isEmpty else { throw .invalidValue(option: "--html-report", value: path, reason: "the path is empty") }
            arguments.htmlReport = path
        }
        if let text = last(.shard) {
            do throws(ValueError) {
                arguments.shard = try ListShard(parsing: text)
            } catch {
                throw .invalidValue(option: "--shard", value: text, reason: error.reason)
            }
        }
        arguments.manager = try managerArguments(defaultPriority: .low)
        if arguments.manager.settings.options.contains(.cacheMemoryOnly) {
            throw .conflictingOptions("CacheMemoryOnly", "prefetch", reason: "prefetch only stores images")
        }
        return arguments
    }
}
