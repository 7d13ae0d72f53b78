import ImgCacheCore

/// `imgcache export` arguments.
public struct ExportArguments: Equatable, Sendable {
    /// The list's path ("-": standard input).
    public var input: String
    /// `--webdataset DIR` or `--files DIR`: where the shards go.
    public var directory: String
    /// `--files`: each shard a folder of files (img2dataset's "files" output) rather than a tar.
    public var layout = WebDatasetExport.Layout.webdataset
    /// `--to URL`: the store the shards and manifest go to (then `directory` is empty).
    public var store: RemoteSpec?
    public var shardSize = ExportArguments.defaultShardSize
    public var captionColumn: String?
    public var includesOptedOut = false
    /// `--min-size`, `--max-aspect`, `--max-pixels`: rows whose image is left out, as `filtered`.
    public var filters = WebDatasetExport.Filters()
    /// `--report`: the rows counted by status and reason at the end.
    public var report = false
    /// Lists read after `input`, in turn, as one list (each its own table): the keys go on across them.
    public var moreInputs: [String] = []
    public var listFormat = ListFormat.Choice()
    public var manager = ManagerArguments()

    public static let defaultShardSize = 10_000
    /// The manager's options export refuses: it reads the local cache and downloads nothing.
    static let refused: Set<OptionName> = [.refresh, .noCacheRead, .retryFailed, .remote, .remoteReshare, .remember]

    public init(input: String, directory: String) {
        self.input = input
        self.directory = directory
    }
}

/// `imgcache export --webdataset DIR LIST`: the cached images of a list (or
/// their variants, made from the cached originals), as WebDataset tar shards.
typealias ExportCommand = CommandRun<ExportArguments>

extension ExportCommand {
    func run() throws(SystemError) -> ExitStatus {
        for path in [arguments.input] + arguments.moreInputs {
            guard ManagerSetup.checkColumn(arguments.captionColumn, option: "--caption-column", path: path,
                                           format: arguments.listFormat, console: console) else { return .usage }
        }
        guard let list = ManagerSetup.openLists([arguments.input] + arguments.moreInputs, format: arguments.listFormat, console: console,
                                                quiet: globals.quiet) else {
            return .noInput
        }
        var destination = arguments.directory
        var upload: DataSetUpload?
        var downloader: Downloader?
        defer { downloader?.close() }
        if let store = arguments.store {
            do {
                let made = try Downloader(configuration: RequestFiles.resolved(arguments.manager.downloads, environment: environment))
                downloader = made
                let target = try DataSetUpload(spec: store, downloads: made, environment: environment)
                try target.prepare()
                upload = target
                destination = target.stagingFolder
            } catch let failure as RemoteFailure {
                console.error("cannot export to \(store.identity): \(failure.reason)" + (failure.cause?.commandLineHint ?? ""))
                return .outputFailed
            } catch {
                console.error("cannot export to \(store.identity): \(error)")
                return .outputFailed
            }
        }
        let export: WebDatasetExport
        do throws(WebDatasetExport.Failure) {
            export = try WebDatasetExport(directory: destination, shardSize: arguments.shardSize,
                                          captionColumn: arguments.captionColumn,
                                          urlColumn: arguments.listFormat.urlColumn ?? ListFormat.defaultURLColumn,
                                          includesOptedOut: arguments.includesOptedOut, layout: arguments.layout, upload: upload)
            export.filters = arguments.filters
        } catch {
            console.error(error.reason)
            return .outputFailed
        }
        var manager = arguments.manager
        // Nothing is downloaded: the cache answers, or the row is missing.
        manager.settings.options.insert(.fromCacheOnly)
        let fetcher: ImageFetcher
        switch ManagerSetup.fetcher(manager, cache: cache, console: console, environment: environment) {
        case .success(let made): fetcher = made
        case .failure(let status): return status
        }
        defer { fetcher.close() }
        var failure: WebDatasetExport.Failure?
        let otherVariants = CachedVariants(namespace: cache.directory)
        var inputError: SystemError?
        var inputStatus = ExitStatus.noInput
        // In the list's order, so the same list gives the same shards.
        try fetcher.fetch(list, deliver: { (outcome) throws(SystemError) in
            guard failure == nil else { return }
            let row = list.rows.take(outcome.index)
            do throws(WebDatasetExport.Failure) {
                var remembered: FailedURLStore.Record?
                var others: WebDatasetExport.OtherVariants?
                if case .failure(.notCached)? = outcome.result {
                    remembered = fetcher.lastFailure(of: outcome.url)
                    if remembered == nil { others = otherVariants.of(outcome.url) }
                }
                let filteredBefore = export.counts.filtered
                try export.add(index: outcome.index, url: outcome.url, result: outcome.result ?? .failure(.interrupted(url: outcome.url)),
                               row: row, lastFailure: remembered, otherVariants: others)
                // A failed row is said as prefetch says it (a missing one, or one a filter left out, only in the manifest and the summary).
                if case .failure(let error)? = outcome.result, export.counts.filtered == filteredBefore {
                    switch error {
                    case .notCached, .interrupted: break
                    default: console.error(error.commandLineMessage)
                    }
                }
            } catch {
                // The rest is only looked up (nothing is downloaded) and left out.
                failure = error
            }
        }, update: { (update) throws(SystemError) in
            if case .inputFailed(let error) = update {
                inputError = error
                inputStatus = ManagerSetup.reportInputFailure(error, console: console)
            }
        })
        let place = arguments.store?.identity ?? arguments.directory
        // All or nothing: a folder an export failed or was stopped in is left as it was.
        if let failure {
            console.error(failure.reason + (arguments.store == nil ? "; nothing of this export was kept"
                                            : "; no manifest was written (shards sent stay in the store until an export replaces them)"))
            return .outputFailed
        }
        if fetcher.interruption.signal != nil {
            console.error(arguments.store == nil ? "interrupted: nothing of this export was kept"
                          : "interrupted: no manifest was written; the shards sent stay in the store until an export replaces them")
            return ManagerSetup.interruptedStatus(fetcher, console: console)
        }
        if inputError != nil {
            console.error(arguments.store == nil ? "nothing of this export was kept"
                          : "no manifest was written to \(place) (shards sent stay until an export replaces them)")
            return .noInput
        }
        let counts: WebDatasetExport.Counts
        do throws(WebDatasetExport.Failure) { counts = try export.finish() } catch {
            console.error(error.reason)
            return .outputFailed
        }
        if let column = arguments.captionColumn, !export.sawCaptionColumn, counts.exported > 0 {
            console.warning("no row has a column '\(column)' (--caption-column): no KEY.txt was written")
        }
        try report(counts)
        if arguments.report { try reportReasons(counts) }
        let status: ExitStatus = counts.missing + counts.failed > 0 ? .someFailed : .success
        return inputError == nil ? status : .worse(status, inputStatus)
    }

    private func report(_ counts: WebDatasetExport.Counts) throws(SystemError) {
        if globals.json {
            var object = JSONObject()
            object.add("rows", counts.rows)
            object.add("exported", counts.exported)
            object.add("missing", counts.missing)
            object.add("failed", counts.failed)
            object.add("opted_out", counts.optedOut)
            object.add("filtered", counts.filtered)
            object.add("shards", counts.shards)
            if let store = arguments.store { object.add("to", store.identity) } else { object.add("directory", arguments.directory) }
            try console.output(object.serialized)
            return
        }
        guard !globals.quiet else { return }
        try console.output("\(Plural.count(counts.rows, "row")): \(counts.exported) exported in \(Plural.count(counts.shards, "shard")), "
                           + "\(counts.missing) missing, \(counts.failed) failed, \(counts.optedOut) opted out, \(counts.filtered) filtered "
                           + "(\(arguments.store?.identity ?? arguments.directory))")
    }

    /// `--report`: every status, and within it every reason, with its count (most first); with `--json`, one object.
    private func reportReasons(_ counts: WebDatasetExport.Counts) throws(SystemError) {
        let statuses = ["exported", "filtered", "opted_out", "missing", "failed"]
        if globals.json {
            var object = JSONObject()
            object.add("report", true)
            for status in statuses {
                var reasons = JSONObject()
                for (reason, count) in (counts.reasons[status] ?? [:]).sorted(by: { ($1.value, $0.key) < ($0.value, $1.key) }) {
                    reasons.add(reason.isEmpty ? "total" : reason, count)
                }
                object.add(status, .object(reasons))
            }
            try console.output(object.serialized)
            return
        }
        for status in statuses {
            let reasons = counts.reasons[status] ?? [:]
            try console.output("\(ExportCommand.padded(status, 10)) \(reasons.values.reduce(0, +))")
            for (reason, count) in reasons.sorted(by: { ($1.value, $0.key) < ($0.value, $1.key) }) where !reason.isEmpty {
                try console.output("  \(ExportCommand.padded(reason, 24)) \(count)")
            }
        }
    }

    static func padded(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }
}

extension ExportArguments: Subcommand {
    /// The command's name and one-line summary, apart from its table: a run finds its command, and
    /// `help` lists them all, without building every command's table.
    static let name = "export"
    static let summary = "Write a list's cached images as WebDataset tar shards"
    static let spec = CommandSpec(
        name: name, summary: summary,
        description: """
            Reads a list (lines, or a CSV, TSV or JSONL table, as prefetch does) and writes the \
            image each row has in the cache, in the list's order, into tar shards of --shard-size \
            samples in the --webdataset folder (00000.tar, 00001.tar, ...): per sample KEY.EXT (the \
            image, or its variant with --thumbnail, --fit, --format, made from the cached original), \
            KEY.json (url, sha256, width, height, format, original_width, original_height and the row's other columns) and KEY.txt \
            (the --caption-column's text). KEY is the row's position in the list, nine digits. \
            Nothing is downloaded: run prefetch first; a row not cached is 'missing'. manifest.jsonl \
            in the folder says what became of every row (exported, filtered, opted_out, missing, failed), why, and its columns. \
            Images whose server sent X-Robots-Tag noai or noimageai are left out unless \
            --include-opted-out. The same list and cache give the same bytes. With --to URL the \
            shards go to an S3 bucket or a WebDAV store instead, each sent whole and checked as it is \
            finished (written meanwhile in $TMPDIR), and manifest.jsonl last: a manifest there means \
            the whole data set is. Exit 1 when a row is missing or failed, 74 when the folder or store \
            cannot be written.
            """,
        options: [
            .value(.webdataset, metavar: "DIR", kind: .directory,
                   help: "The folder the shards and manifest.jsonl go to (made if missing; one holding anything else is refused)"),
            .value(.files, metavar: "DIR", kind: .directory,
                   help: "Instead of --webdataset: each shard a folder of files (00000/000000000.jpg, .json, .txt), img2dataset's \"files\" output, with the same manifest"),
            .value(.to, metavar: "URL", kind: .url,
                   help: "Instead of a folder: the shards and manifest.jsonl go to an S3 bucket (s3://bucket/prefix?endpoint=URL&region=R) "
                       + "or an HTTP/WebDAV store (https://host/path), each shard sent whole and checked, the manifest last; "
                       + "after a |, a store's attributes (|user-env=NAME, |bearer-env=NAME, |timeout=2m)"),
            .value(.shardSize, metavar: "N", kind: .text, help: "Samples per shard (default \(ExportArguments.defaultShardSize))"),
            .value(.captionColumn, metavar: "NAME", kind: .text, help: "The table's column whose text goes in KEY.txt"),
            .flag(.includeOptedOut, help: "Export images whose server opted them out of AI training (X-Robots-Tag noai, noimageai) too"),
            .value(.minSize, metavar: "WxH", kind: .text,
                   help: "Leave out images (as served, upright) narrower than W or lower than H: 'filtered' in the manifest, with the reason (img2dataset's min_image_size)"),
            .value(.maxAspect, metavar: "R", kind: .text,
                   help: "Leave out images whose long side is more than R times the short one: 'filtered' (img2dataset's max_aspect_ratio)"),
            .flag(.report, help: "At the end, count the rows by status (exported, filtered, opted_out, missing, failed) and reason"),
        ] + CommandTable.listOptions + CommandTable.managerOptions.filter { !ExportArguments.refused.contains($0.name) },
        refusedOptions: CommandTable.managerOptions.filter { ExportArguments.refused.contains($0.name) },
        operands: [OperandSpec(name: "LIST", kind: .path,
                               help: "list of URLs or table ('-': standard input); several are read in turn as one list, each table with its own header, the keys going on",
                               minimum: 1, maximum: nil)],
        examples: [
            ("imgcache export --webdataset shards/ images.csv", "the cached images of a table, 10000 per shard"),
            ("imgcache export --files dataset/ --thumbnail 256x256 --fit outside images.csv", "img2dataset's files layout, short side 256"),
            ("imgcache export --to 's3://data/laion/part1?endpoint=https://minio.lan:9000' images.csv",
             "the shards straight into a bucket (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)"),
            ("imgcache export --webdataset shards/ --thumbnail 256x256 --fit cover --format webp --caption-column caption images.csv",
             "256-pixel WebP thumbnails with captions"),
        ]
    )

    static func invocation(_ options: ParsedOptions, globals: GlobalOptions) throws(UsageError) -> Invocation {
        .run(globals, Command(try options.exportArguments()))
    }

    static func run(_ command: ExportCommand) throws(SystemError) -> ExitStatus { try command.run() }
}

/// `export` arguments from the parsed words.
extension ParsedOptions {
    func exportArguments() throws(UsageError) -> ExportArguments {
        guard let input = operands.first else { throw .missingOperand(command: "export", operand: "a list (LIST, or '-')") }
        if has(.webdataset), has(.files) { throw .conflictingOptions("--webdataset", "--files", reason: "a data set has one layout") }
        var store: RemoteSpec?
        if let text = last(.to) {
            if has(.webdataset) { throw .conflictingOptions("--to", "--webdataset", reason: "a data set goes to a folder or to a store, not both") }
            // A folder of files cannot be put in a store whole, as a shard's tar is.
            if has(.files) {
                throw .conflictingOptions("--to", "--files", reason: "a store takes a data set as tar shards, each sent whole; write --files to a folder")
            }
            do { store = try RemoteSpec(parsing: text) } catch { throw .invalidValue(option: "--to", value: RemoteSpec.redacted(text), reason: error.reason) }
            // Sent on as a rename's Destination, a password in the URL would reach the server's logs.
            if store!.hasCredentialsInURL {
                throw .invalidValue(option: "--to", value: store!.identity,
                                    reason: "a password in the URL is not sent on: give it with |user-env=NAME (user:password in that variable)")
            }
            // What a data set's store takes: credentials and timeouts; not a cache store's read-only or ttl.
            let allowed: Set<String> = ["user-env", "bearer-env", "bearer-file", "timeout", "connect-timeout"]
            if let other = store!.attributeNames.subtracting(allowed).sorted().first {
                throw .invalidValue(option: "--to", value: store!.identity,
                                    reason: "|\(other) is not for a data set's store (it takes \(allowed.sorted().map { "|" + $0 }.joined(separator: ", ")))")
            }
            switch store!.kind {
            case .http, .s3: break
            case .redis, .redisSocket:
                throw .invalidValue(option: "--to", value: store!.identity, reason: "a data set goes to an S3 bucket or an HTTP (WebDAV) store, not to Redis")
            }
        }
        guard let directory = last(.webdataset) ?? last(.files) ?? (store == nil ? nil : "") else {
            throw .missingOperand(command: "export", operand: "--webdataset DIR (or --files DIR, or --to URL)")
        }
        guard store != nil || !directory.isEmpty else {
            throw .invalidValue(option: has(.files) ? "--files" : "--webdataset", value: directory, reason: "the path is empty")
        }
        var arguments = ExportArguments(input: input, directory: directory)
        arguments.moreInputs = Array(operands.dropFirst())
        if operands.filter({ $0 == "-" }).count > 1 { throw .invalidValue(option: "LIST", value: "-", reason: "standard input can be read once") }
        arguments.store = store
        if has(.files) { arguments.layout = .files }
        if let text = last(.shardSize) { arguments.shardSize = try integer(text, option: "--shard-size", in: 1...10_000_000) }
        arguments.captionColumn = last(.captionColumn)
        arguments.includesOptedOut = has(.includeOptedOut)
        arguments.report = has(.report)
        if let text = last(.minSize) {
            guard let box = ImageTransform.BoxSize(parsing: text) else {
                throw .invalidValue(option: "--min-size", value: text, reason: "expected WIDTHxHEIGHT, WIDTHx or xHEIGHT (each from 1 to 65535)")
            }
            arguments.filters.minimumSize = box
        }
        if let text = last(.maxAspect) {
            guard let ratio = Double(text), ratio.isFinite, ratio >= 1 else {
                throw .invalidValue(option: "--max-aspect", value: text, reason: "expected a ratio of 1 or more (2, 3.5)")
            }
            arguments.filters.maximumAspect = ratio
        }
        arguments.listFormat = try listFormat()
        arguments.manager = try managerArguments(defaultPriority: .normal)
        if has(.maxPixels) { arguments.filters.maximumPixels = arguments.manager.settings.maximumPixels }
        if arguments.manager.settings.variants.filter({ !$0.makesPlaceholder }).count > 1 {
            throw .conflictingOptions("export", "several sizes or formats", reason: "a sample holds one image: give one size and one format")
        }
        let downloading: [(ImageOptions, String)] = [(.cacheMemoryOnly, "CacheMemoryOnly"), (.refreshCached, "--refresh"),
                                                      (.fromLoaderOnly, "--no-cache-read"), (.retryFailed, "--retry-failed")]
        for (option, name) in downloading where arguments.manager.settings.options.contains(option) {
            throw .conflictingOptions(name, "export", reason: "export only reads the cache, it downloads nothing")
        }
        for name in [OptionName.remote, .remoteReshare, .remember] where has(name) {
            throw .conflictingOptions("--" + name.rawValue, "export", reason: "export only reads the local cache")
        }
        // Nor IMGCACHE_REMOTE, nor the namespace's remembered stores.
        arguments.manager.usesRemotes = false
        return arguments
    }
}

/// The URLs the cache holds variants of, read from the namespace on first use (a row not in the
/// cache as asked, with no failure remembered, asks): a URL prefetched with `--no-original` and other
/// variants is then said as such, not as never fetched.
final class CachedVariants {
    private let namespace: String
    private var byURL: [String: WebDatasetExport.OtherVariants]?

    init(namespace: String) {
        self.namespace = namespace
    }

    func of(_ url: String) -> WebDatasetExport.OtherVariants? {
        if byURL == nil {
            var found: [String: WebDatasetExport.OtherVariants] = [:]
            _ = try? CacheListing.forEach(in: namespace) { entry in
                guard entry.transform != nil, let url = entry.url else { return }
                if found[url]?.optedOut != true { found[url] = WebDatasetExport.OtherVariants(optedOut: entry.optedOut) }
            }
            byURL = found
        }
        return byURL?[url]
    }
}
