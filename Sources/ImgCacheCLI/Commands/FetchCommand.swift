#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCore

/// `imgcache fetch` arguments.
public struct FetchArguments: Equatable, Sendable {
    public var urls: [String]
    /// A list of URLs to read instead ("-" is standard input).
    public var input: String?
    /// Where to write a copy of the image ("-" is standard output).
    public var output: String?
    /// Print `URL<TAB>PATH` lines rather than paths.
    public var withURL = false
    /// Copy each image into this folder under its URL's file name.
    public var outputDirectory: String?
    /// `--prune`: remove the copies in `outputDirectory` this run did not name (files the template could have made only).
    public var prunes = false
    /// Print each URL's variants as an HTML `srcset` (`path 320w, path 640w`).
    public var srcset = false
    /// Print each URL's image as one HTML `<picture>` element.
    public var html = false
    /// What the markup and the copies are told (`--alt`, `--sizes`, `--site-root`, `--url-prefix`, `--placeholder`, `--name`).
    public var page = PageSettings()
    /// How the list (`-i`) is written, where the command line says.
    public var listFormat = ListFormat.Choice()
    public var manager = ManagerArguments()

    public init(urls: [String], output: String? = nil) {
        self.urls = urls
        self.output = output
    }
}

/// `imgcache fetch URL...` (or a list, `-i FILE`): each URL from the cache or
/// the network, then one line per URL in their order (its path, or an empty
/// line when it failed), a JSON line, or the image itself (`-o`).
typealias FetchCommand = CommandRun<FetchArguments>

extension FetchCommand {
    func run() throws(SystemError) -> ExitStatus {
        var list: URLList?
        if let input = arguments.input {
            guard ManagerSetup.checkColumn(arguments.page.altColumn, option: "--alt-column", path: input, format: arguments.listFormat,
                                           console: console) else { return .usage }
            guard let opened = ManagerSetup.openList(input, format: arguments.listFormat, console: console, quiet: globals.quiet) else {
                return .noInput
            }
            list = opened
        }
        var manager = arguments.manager
        // -o FILE on a cache that cannot be written (a read-only mount, another user's folder):
        // the output still gets the image, as on a full disk, and nothing is stored.
        if arguments.output != nil, let denial = FetchCommand.writeDenial(of: cache.directory) {
            console.warning("the cache \(ControlCharacters.escaped(cache.directory)) cannot be written (\(denial)): nothing is stored; "
                            + "the output gets the image")
            manager.settings.options.insert(.cacheMemoryOnly)
        }
        let fetcher: ImageFetcher
        switch ManagerSetup.fetcher(manager, cache: cache, console: console, environment: environment) {
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
                try answers.print(url: outcome.url, outcome.result ?? .failure(.interrupted(url: outcome.url)),
                                  row: list.rows.take(outcome.index))
                // Each line as it is known, for readers of a pipe (a script's while-read loop).
                try console.standardOutput.flush()
            }, update: { (update) throws(SystemError) in
                if case .inputFailed(let error) = update {
                    answers.status = ExitStatus.worse(answers.status, ManagerSetup.reportInputFailure(error, console: console))
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
        if arguments.prunes, answers.status != .success {
            // A URL that failed (the server down, a deadline) named no copy: its copies from
            // earlier runs are what the page still shows, so nothing is removed.
            console.note("--prune: nothing removed, since not every URL was answered with its image (exit status \(answers.status.rawValue))")
        } else if arguments.prunes, answers.namedNoCopy {
            // An empty list (a header alone, comments) names nothing: pruning would empty the folder.
            console.note("--prune: nothing removed, since the run named no copy (an empty list?)")
        } else if arguments.prunes, let removed = answers.prune() {
            console.note("--prune: \(Plural.count(removed.count, "copy", "copies")) no longer named removed" + (removed.isEmpty ? "" : ": " + removed.prefix(5).joined(separator: ", ")
                         + (removed.count > 5 ? ", …" : "")))
        }
        if let column = arguments.page.altColumn, answers.warnings.printedMarkup, !answers.warnings.sawAltColumn {
            console.warning("no row has a column '\(column)' (--alt-column): every alt text is empty")
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
        /// So does a file the requests need that cannot be used.
        private var saidUnusable = false
        /// `--output-dir`: the copies of this run.
        private var copier: SiteCopier?
        /// Why copies of the answer being printed could not be made (none: every copy was).
        private var copyErrors: [String] = []
        /// What the markup has said once (an address out of the site, an `--alt-column` found).
        var warnings = PageWarnings()
        /// Asked while an output FIFO waits for its reader: a signal stops the wait.
        let interruption: FetchInterruption

        init(command: FetchCommand, interruption: FetchInterruption) {
            self.command = command
            self.interruption = interruption
            copier = command.arguments.outputDirectory.map { SiteCopier(directory: $0, template: command.arguments.page.names) }
        }

        /// `--prune`: the copies this run did not name, removed (their names); nil without copies.
        func prune() -> [String]? { copier?.prune() }
        /// Whether the run named no copy in `--output-dir`.
        var namedNoCopy: Bool { copier?.namedNothing ?? true }

        mutating func print(url: String, _ answer: Result<FetchResult, FetchError>, row: JSONObject? = nil) throws(SystemError) {
            statistics.count(answer)
            let console = command.console, globals = command.globals, arguments = command.arguments
            switch answer {
            case .success(let result):
                if let warning = result.staleWarning { console.warning(warning) }
                if let warning = result.notStoredWarning { console.warning(warning) }
                var files = FetchCommand.shownFiles(of: result)
                copyErrors = []
                if var copier {
                    let copied = copier.copy(result, url: url, isCancelled: { [interruption] in interruption.signal != nil })
                    self.copier = copier
                    files = copied.files
                    for message in copied.refused { refuseCopy(message) }
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
                    if globals.json { try console.output(command.json(result, files: files, row: row, copyErrors: copyErrors).serialized) }
                } else if globals.json {
                    try console.output(command.json(result, files: files, row: row, copyErrors: copyErrors).serialized)
                } else if arguments.html {
                    // A page never gets markup pointing at the cache for a copy that was not made: the line stays empty.
                    try printLine(url: url, path: !copyErrors.isEmpty ? "" : command.picture(result, files: files, row: row, warn: &warnings))
                } else if arguments.srcset {
                    try printLine(url: url, path: !copyErrors.isEmpty ? "" : command.srcsets(result, files: files))
                } else {
                    // One line per URL: its variants' paths TAB-separated, in the order asked.
                    try printLine(url: url, path: result.variants.isEmpty ? result.path : result.variants.map(\.path).joined(separator: "\t"))
                }
            case .failure(let error):
                switch error {
                case .interrupted: interrupted = true
                case .cacheUnwritable where saidUnwritable, .requestFileUnusable where saidUnusable: break
                case .cacheUnwritable: console.error(RemoteURL.displayed(url) + ": " + error.commandLineMessage)
                default: console.error(error.commandLineMessage)
                }
                if case .cacheUnwritable = error { saidUnwritable = true }
                if case .requestFileUnusable = error { saidUnusable = true }
                if globals.json { try console.output(ManagerSetup.errorJSON(url: url, error: error).with(row: row).serialized) }
                // Every URL keeps its line, so that the output lines up with the input (paste).
                else if arguments.output == nil { try printLine(url: url, path: "") }
                status = ExitStatus.worse(status, error.exitStatus)
            }
        }

        /// A copy that was not made: said, kept for the JSON line's `copy_error`, and exit 74.
        private mutating func refuseCopy(_ message: String) {
            command.console.error(message)
            copyErrors.append(message)
            status = ExitStatus.worse(status, .outputFailed)
        }

        private func printLine(url: String, path: String) throws(SystemError) {
            let line = command.arguments.withURL ? RemoteURL.redacted(url) + "\t" + path : path
            try command.console.output(line)
        }
    }

    /// `result`'s JSON line, with the `--output-dir` copies when there are any (`copies`, and each
    /// variant's `copy`), and each file's address in a page (`url`) with `--site-root` or `--url-prefix`.
    func json(_ result: FetchResult, files: [ShownFile], row: JSONObject?, copyErrors: [String] = []) -> JSONObject {
        var object = result.json
        let copies = files.compactMap(\.copy)
        let page = arguments.page
        let addressed = page.rewritesPaths || arguments.outputDirectory != nil
        if !result.variants.isEmpty, addressed, case .array(let items)? = object.fields.first(where: { $0.0 == "variants" })?.1 {
            // Each item is its variant's (in order); the files shown are fewer when an animation's
            // stills are left out, so they are matched by path, not by place.
            let variants: [JSONValue] = zip(items, result.variants).map { item, variant in
                guard case .object(var entry) = item, let file = files.first(where: { $0.path == variant.path }) else { return item }
                entry.add("copy", file.copy)
                // No address for a copy not made: a page never points at the cache for it.
                if file.copy != nil || arguments.outputDirectory == nil { entry.add("url", page.address.address(of: file.copy ?? file.path)) }
                return .object(entry)
            }
            object.set("variants", .array(variants))
        } else if result.variants.isEmpty, addressed, let file = files.first {
            object.add("copy", file.copy)
            if file.copy != nil || arguments.outputDirectory == nil { object.add("page_url", page.address.address(of: file.copy ?? file.path)) }
        }
        // A copy that was not made (a name clash, a write error): said, so that no page addresses the cache instead.
        if !copyErrors.isEmpty { object.add("copy_error", copyErrors.joined(separator: "; ")) }
        if !copies.isEmpty { object.add("copies", .array(copies.map { .string($0) })) }
        return object.with(row: row)
    }

    /// The extended attribute naming the URL a copy was written for: a later run knows its copies from another URL's.
    static let copyOwnerAttribute = "user.imgcache.copy-of"

    /// Why the namespace folder `directory` cannot be written (a read-only file system, no
    /// permission), nil when it can, or when it is missing and its parent can be written.
    static func writeDenial(of directory: String) -> String? {
        var path = directory
        // The nearest folder that exists: where the namespace would be made.
        while FileSystem.accessDenial(path, F_OK) != nil, path.contains("/"), path != "/" {
            path = FileSystem.parentDirectory(of: path)
        }
        guard let denial = FileSystem.accessDenial(path, W_OK), denial == Errno(EROFS) || denial == Errno(EACCES) else { return nil }
        return denial.description
    }

    /// The longest URL file name `--output-dir` keeps: room is left for `-WxH`, a digest and an extension.
    static let longestRemoteName = 200

    /// `name` with `suffix` before its extension: `photo.jpg`, `-320x213` is `photo-320x213.jpg`.
    static func suffixed(_ name: String, _ suffix: String) -> String {
        let dot = name.lastIndex(of: ".") ?? name.endIndex
        return name[..<dot] + suffix + name[dot...]
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
        // Percent-escapes decoded, as a browser shows the name (`my%20photo.jpg` is `my photo.jpg`),
        // unless that would make a name no file can have.
        let escaped = String(segments.last ?? "")
        let decoded = String(validating: URLText.percentDecoded(Array(escaped.utf8)[...]), as: UTF8.self) ?? escaped
        let name = decoded.contains("/") || decoded.contains("\0") || decoded.unicodeScalars.contains { $0.value < 0x20 } ? escaped : decoded
        // A name no file system takes (over 255 bytes once a size and a digest are added): the cached file's.
        guard !name.isEmpty, name != ".", name != "..", !name.contains("\0"), name.utf8.count <= FetchCommand.longestRemoteName else {
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
            // Standard output appended to a file in the cache (`>> entry`): refused as -o with its name is.
            if let named = OutputFile.fileOfStandardOutput() { try FetchCommand.refuseInsideACache(named) }
            try console.standardOutput.flush()
            try FileSystem.copy(path, to: 1, destinationName: "standard output")
        } else {
            try FetchCommand.copy(path, to: output, isCancelled: isCancelled)
        }
    }

    /// Copies the cached image at `path` to `target` (-o, --output-dir); never into a namespace.
    static func copy(_ path: String, to target: String, isCancelled: () -> Bool) throws(SystemError) {
        // The cached image itself: it is there already (a copy over it would drop its metadata).
        if OutputFile.isSameFile(path, target) { return }
        try refuseInsideACache(target)
        try OutputFile.write(contentsOf: path, to: target, isCancelled: isCancelled)
    }

    static func refuseInsideACache(_ target: String) throws(SystemError) {
        guard OutputFile.isInsideACache(target) else { return }
        throw SystemError("write", path: target, errno: Errno(EINVAL),
                          detail: "it is inside an imgcache namespace, whose files only imgcache's own stores write")
    }
}

extension FetchArguments: Subcommand {
    /// The command's name and one-line summary, apart from its table: a run finds its command, and
    /// `help` lists them all, without building every command's table.
    static let name = "fetch"
    static let summary = "Get images: from the cache if there, else download and store them"
    static let spec = CommandSpec(
        name: name,
        summary: summary,
        description: """
            Looks each URL up in the cache; the misses are downloaded together, up to -j at \
            a time over kept-alive connections (redirects followed, a 15 s idle timeout), and \
            the same URL given twice is downloaded once. Each body must be a \(CodecRegistry.spelled(CodecRegistry.storedFormats)) \
            image whose header decodes; it is then stored atomically, named for its format \
            (\(CodecRegistry.spelled(CodecRegistry.storedFormats, extensions: true))). Prints one line per URL, in the order of the \
            URLs: the cached file's path, or an empty line for a URL that failed (its error \
            goes to standard error, and the others go on). URLs may also come from a list, \
            one per line (--input FILE, or '-' for standard input), answered in order as \
            they finish, in the same memory however long the list.
            """,
        options: [
            .value(.output, "o", metavar: "FILE", kind: .path,
                   help: "Also write the image to FILE ('-' for standard output); one URL only. A device, FIFO or link is written through, a plain file replaced atomically. A name ending in \(CodecRegistry.spelled(CodecRegistry.storedFormats, extensions: true)) must match the image's format"),
            .value(.input, "i", metavar: "FILE", kind: .path,
                   help: "Read URLs from FILE, one per line ('-': standard input; blank lines and '#' comments skipped), or a CSV, TSV or JSONL table (--input-format)"),
            .flag(.withUrl, help: "Print URL<TAB>PATH lines (an empty PATH for a URL that failed)"),
            .flag(.srcset, help: "Print each URL's variants as an HTML srcset: 'PATH 320w, PATH 640w', one per format TAB-separated, each width once (with --thumbnail)"),
            .flag(.html, help: "Print each URL's image as one HTML <picture>: a <source> per --format (best first), the last format as the <img> with src, srcset, sizes, width, height, alt, loading=lazy and decoding=async; for an animation, formats that keep no frames are left out"),
            .value(.outputDir, metavar: "DIR", kind: .directory,
                   help: "Also copy each image (or its variants) into DIR, named from --name (DIR made if missing); a copy already holding the same bytes is left untouched; --html, --srcset and --json then address the copies"),
            .flag(.prune, help: "With --output-dir: once the run is done, and only when every URL was answered (exit status 0), remove the copies imgcache wrote in DIR that this run did not name and whose names --name could have made (an image no page shows any more); nothing else is touched"),
            .value(.name, metavar: "TEMPLATE", kind: .text,
                   help: "How --output-dir names a copy: {stem} (the URL's file name without extension), {ext}, {width}, {height}, {format}, {hash8} or {hash} (SHA-256 of its bytes), {urlhash8}; '/' makes folders (default {stem}-{width}.{hash8}.{ext})"),
            .value(.siteRoot, metavar: "DIR", kind: .directory,
                   help: "Write paths in --html, --srcset and --json relative to this folder (where the page is)"),
            .value(.urlPrefix, metavar: "URL", kind: .text,
                   help: "Write paths in --html, --srcset and --json under this prefix ('/img/', 'https://cdn.example/'), followed by the path from --site-root, else from --output-dir"),
            .value(.alt, metavar: "TEXT", kind: .text, help: "The alt text of every --html image (default: empty, a decorative image)"),
            .value(.altColumn, metavar: "NAME", kind: .text, help: "Take each --html image's alt text from this column of a table list (--input)"),
            .value(.sizes, metavar: "SIZES", kind: .text, help: "The sizes attribute of --html images: how wide they are shown (default 100vw)"),
            .value(.placeholder, metavar: "KIND", kind: .choice(ValueKind.Words(PageSettings.Placeholder.allCases.map(\.rawValue))),
                   help: "What an --html image shows while it loads: color (its dominant colour) or lqip (its tiny preview, inline), behind an opaque image only; makes --placeholders"),
            .value(.loading, metavar: "MODE", kind: .choice(["lazy", "eager"]),
                   help: "The loading attribute of --html images: lazy (default) or eager (for the image a page shows first)"),
            .value(.fetchpriority, metavar: "LEVEL", kind: .choice(["high", "low", "auto"]),
                   help: "The fetchpriority attribute of --html images: high (a page's main image), low or auto; default none"),
            .flag(.memoryOnly, help: "Do not store the image: write it to --output only (CacheMemoryOnly)"),
            .flag(.progressive, help: "Show the download's progress on a terminal, or in -v lines (ProgressiveDownload)"),
        ] + CommandTable.listOptions + CommandTable.managerOptions + CommandTable.downloadOptions,
        operands: [OperandSpec(name: "URL", kind: .url, help: "http or https URL of an image ('-': read URLs from standard input)",
                               minimum: 0, maximum: nil)],
        examples: [
            ("imgcache fetch https://example.com/logo.png", "print the cached file's path"),
            ("imgcache fetch -i urls.txt --with-url", "URL<TAB>PATH for each line of a list, in order"),
            ("imgcache fetch -o logo.png https://example.com/logo.png", "save a copy as logo.png"),
            ("imgcache --json fetch URL1 URL2", "one JSON object per URL"),
            ("imgcache fetch -j 12 --retries 2 $(cat urls.txt)", "many at once, retrying transient failures"),
            ("imgcache fetch -H 'Referer: https://example.com/' -u me:secret URL", "with a header and credentials"),
            ("imgcache fetch --key-filter keep-query=w,h 'https://cdn.example/a.jpg?w=64&h=64&sig=x'", "one entry whatever the signature"),
        ]
    )
    var scope: CommandScope { .fetching }
    var looksUpMany: Bool { input != nil || urls.count > 1 }

    static func invocation(_ options: ParsedOptions, globals: GlobalOptions) throws(UsageError) -> Invocation {
        .run(globals, Command(try options.fetchArguments(globals: globals)))
    }

    static func run(_ command: FetchCommand) throws(SystemError) -> ExitStatus { try command.run() }
}

/// `fetch` arguments from the parsed words.
extension ParsedOptions {
    func fetchArguments(globals: GlobalOptions) throws(UsageError) -> FetchArguments {
        var input = last(.input)
        if let input {
            guard !input.isEmpty else { throw .invalidValue(option: "--input", value: input, reason: "the path is empty") }
            if !operands.isEmpty { throw .conflictingOptions("--input", "URL operands", reason: "the URLs come from the list") }
        } else if operands.contains("-") {
            // `fetch -` reads the list from standard input, as `fetch -i -` does.
            guard operands.count == 1 else { throw .conflictingOptions("-", "URL operands", reason: "'-' reads the URLs from standard input") }
            input = "-"
        } else if operands.isEmpty {
            // A URL given right after an option that takes a value (-j URL, -u URL) was taken as that value.
            if let (name, value) = valueTakenForTheURL() {
                let spec = (try? option(long: name.rawValue, spelled: "--" + name.rawValue))
                let spelled = spec?.short.map { "-\($0)" } ?? "--" + name.rawValue
                throw .missingOperand(command: "fetch", operand: "a URL (or --input FILE): \(spelled) took '\(UsageError.visible(value))' as its value "
                                      + "(\(spelled) \(spec?.metavar ?? "VALUE")); give \(spelled) its value before the URL")
            }
            throw .missingOperand(command: "fetch", operand: "a URL (or --input FILE)")
        }
        // One image goes to one file: a second -o would silently win over the first.
        if let outputs = values[.output], outputs.count > 1 {
            throw .conflictingOptions("--output \(UsageError.visible(outputs[0]))", "--output \(UsageError.visible(outputs[1]))",
                                      reason: "give --output once (one URL, one file; --output-dir for several)")
        }
        let output = last(.output)
        if let output {
            guard !output.isEmpty else { throw .invalidValue(option: "--output", value: output, reason: "the path is empty") }
            if operands.count > 1 || input != nil {
                throw .conflictingOptions("--output", input != nil ? "a list of URLs" : "several URLs", reason: "--output writes one image")
            }
            if output == "-" && globals.json {
                throw .conflictingOptions("--output -", "--json", reason: "both write to standard output")
            }
        }
        var arguments = FetchArguments(urls: input == nil ? operands : [], output: output)
        arguments.input = input
        arguments.listFormat = try listFormat()
        if input == nil, has(.inputFormat) || has(.urlColumn) {
            throw .conflictingOptions(has(.inputFormat) ? "--input-format" : "--url-column", "URL operands",
                                      reason: "they say how a list (--input) is read")
        }
        arguments.withURL = has(.withUrl)
        if let directory = last(.outputDir) {
            guard !directory.isEmpty else { throw .invalidValue(option: "--output-dir", value: directory, reason: "the path is empty") }
            if let output { throw .conflictingOptions("--output-dir", "--output \(output)", reason: "--output names the file itself") }
            arguments.outputDirectory = directory
        }
        arguments.prunes = has(.prune)
        if arguments.prunes, arguments.outputDirectory == nil { throw .requires("--prune", "--output-dir") }
        if arguments.withURL, let output { throw .conflictingOptions("--with-url", "--output \(output)", reason: "--output prints no paths") }
        if arguments.withURL, globals.json { throw .conflictingOptions("--with-url", "--json", reason: "JSON lines carry the URL already") }
        arguments.manager = try managerArguments(defaultPriority: .normal)
        arguments.manager.settings.deliversToOutput = output != nil
        let variants = arguments.manager.settings.variants
        if let output, !variants.isEmpty {
            guard variants.count == 1 else {
                throw .conflictingOptions("--output \(output)", "\(variants.count) variants", reason: "--output writes one image")
            }
            try fitTransform(&arguments.manager.settings.variants[0], toOutput: output)
        }
        try pageArguments(&arguments, globals: globals)
        if has(.srcset) {
            arguments.srcset = true
            guard variants.contains(where: { $0.thumbnail != nil }) else { throw .requires("--srcset", "--thumbnail") }
            if globals.json { throw .conflictingOptions("--srcset", "--json", reason: "JSON lines list the variants already") }
            if let output { throw .conflictingOptions("--srcset", "--output \(output)", reason: "--output prints no paths") }
        }
        // One srcset holds one picture at several widths: boxes of other shapes (a square and a 16:9
        // crop) would have the browser swap crops as the width changes, and shift the layout.
        if arguments.html || arguments.srcset {
            let shaped = variants.filter { $0.fit == .cover || $0.fit == .fill || $0.fit == .contain }.compactMap(\.thumbnail)
                .filter(\.isComplete)
            // One shape to a pixel of rounding at the smaller box (a 16:9 ladder of 426x240 and 1280x720).
            func sameShape(_ one: ImageTransform.BoxSize, _ other: ImageTransform.BoxSize) -> Bool {
                abs(one.width! * other.height! - other.width! * one.height!) <= max(one.width!, other.width!)
            }
            if let first = shaped.first, let other = shaped.first(where: { !sameShape($0, first) }) {
                throw .conflictingOptions("--thumbnail \(first)", "\(other)", reason: "--fit \(variants[0].fit.rawValue) makes boxes of two shapes, "
                                          + "which one srcset cannot offer (the browser would switch crops as the page widens); "
                                          + "run once per shape, and put each in a <source media=…> of your own")
            }
        }
        let options = arguments.manager.settings.options
        if options.contains(.cacheMemoryOnly), arguments.outputDirectory != nil || arguments.html {
            throw .conflictingOptions("--memory-only", arguments.html ? "--html" : "--output-dir", reason: "a page addresses stored files")
        }
        if options.contains(.cacheMemoryOnly), output == nil {
            throw .requires("--memory-only", "--output (the image is not stored, so it has no path to print)")
        }
        return arguments
    }
}

extension ParsedOptions {
    /// An option whose value is a URL though the option does not take one (its metavar names no URL):
    /// the URL the command line meant as an operand.
    func valueTakenForTheURL() -> (OptionName, String)? {
        for (name, given) in values {
            guard let value = given.last, value.contains("://"), (try? RemoteURL(parsing: value)) != nil else { continue }
            let spec = try? option(long: name.rawValue, spelled: "--" + name.rawValue)
            if spec?.metavar?.contains("URL") == true { continue }
            return (name, value)
        }
        return nil
    }
}

/// The options of pages: `--html` and what it is told, `--name`, `--site-root`, `--url-prefix`.
extension ParsedOptions {
    func pageArguments(_ arguments: inout FetchArguments, globals: GlobalOptions) throws(UsageError) {
        var page = PageSettings()
        if has(.html) {
            arguments.html = true
            if globals.json { throw .conflictingOptions("--html", "--json", reason: "JSON lines carry each file's url already") }
            if has(.srcset) { throw .conflictingOptions("--html", "--srcset", reason: "the <picture> holds the srcsets") }
            if let output = arguments.output { throw .conflictingOptions("--html", "--output \(output)", reason: "--output prints no markup") }
        }
        for option in [OptionName.alt, .altColumn, .sizes, .placeholder, .loading, .fetchpriority] where has(option) && !arguments.html {
            throw .requires("--" + option.rawValue, "--html")
        }
        page.alt = last(.alt)
        if let column = last(.altColumn) {
            guard arguments.input != nil else { throw .requires("--alt-column", "--input (a CSV, TSV or JSONL table)") }
            page.altColumn = column
        }
        if let sizes = last(.sizes) {
            guard !sizes.isEmpty else { throw .invalidValue(option: "--sizes", value: sizes, reason: "it is empty") }
            page.sizes = sizes
        }
        page.placeholder = last(.placeholder).flatMap(PageSettings.Placeholder.init(rawValue:))
        if let loading = last(.loading) { page.loading = loading }
        page.fetchPriority = last(.fetchpriority)
        if let text = last(.name) {
            guard arguments.outputDirectory != nil else { throw .requires("--name", "--output-dir") }
            do { page.names = try CopyNameTemplate(parsing: text) } catch {
                throw .invalidValue(option: "--name", value: text, reason: error.reason)
            }
        }
        for option in [OptionName.siteRoot, .urlPrefix] where has(option) && !(arguments.html || has(.srcset) || globals.json) {
            throw .requires("--" + option.rawValue, "--html, --srcset or --json")
        }
        if let root = last(.siteRoot) {
            guard !root.isEmpty else { throw .invalidValue(option: "--site-root", value: root, reason: "the path is empty") }
            page.address.siteRoot = root
        }
        if let prefix = last(.urlPrefix) {
            guard page.address.siteRoot != nil || arguments.outputDirectory != nil else {
                throw .requires("--url-prefix", "--output-dir or --site-root (what the path after the prefix is taken from)")
            }
            page.address.urlPrefix = prefix
        }
        page.address.base = arguments.outputDirectory
        arguments.page = page
    }
}
