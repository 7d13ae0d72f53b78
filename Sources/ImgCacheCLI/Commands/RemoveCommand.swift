#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCore

/// `imgcache remove` arguments.
public struct RemoveArguments: Equatable, Sendable {
    public var urls: [String] = []
    public var globs: [String] = []
    public var dryRun = false
    /// `--key-filter`: the filter the entries were fetched with, so their key is found.
    public var keyFilter: CacheKeyFilter = .none
    public init() {}
}

/// `imgcache remove URL...|--match GLOB`: some entries of a namespace, each
/// under its shard's lock.
typealias RemoveCommand = CommandRun<RemoveArguments>

extension RemoveCommand {
    func run() throws(SystemError) -> ExitStatus {
        var removed = 0, bytes: Int64 = 0
        var status = ExitStatus.success
        if !arguments.dryRun {
            do { try cache.prepareForRemoval() } catch {
                console.error(MaintenanceMessages.describe(error))
                return .cacheUnwritable
            }
        }
        // By URL: a lookup of the key fetch would use, then its variants' keys.
        let credentials = CredentialKey(cache: cache)
        for given in arguments.urls {
            let url = URLText.withoutFragment(given)
            let key = CacheKey(arguments.keyFilter.key(for: credentials.keyed(url)))
            var files: [DiskCache.RemovedFile]
            do {
                files = try cache.removeEntry(for: key, dryRun: arguments.dryRun)
                for (variantKey, variant) in cache.variantKeys(of: key) {
                    files += try cache.removeEntry(for: variantKey, variant: variant, dryRun: arguments.dryRun)
                }
            } catch {
                console.error(MaintenanceMessages.describe(error))
                return .cacheUnwritable
            }
            if files.isEmpty {
                console.error("not in the cache: \(UsageError.visible(RemoteURL.redacted(url)))")
                status = ExitStatus.worse(status, .someFailed)
            }
            for file in files {
                removed += 1
                bytes += file.bytes
                try report(url: RemoteURL.redacted(url), path: file.path, variant: file.variant, bytes: file.bytes)
            }
        }
        // By pattern: a listing, as `list PATTERN` makes it.
        if !arguments.globs.isEmpty {
            let patterns = arguments.globs.map(URLPattern.init)
            var matched = Set<String>()
            var failure: SystemError?
            var unreadable: [SystemError] = []
            do {
                unreadable = try CacheListing.forEach(in: cache.directory) { (entry) throws(SystemError) in
                    let matching = patterns.filter { $0.matches(entry.url) }
                    guard !matching.isEmpty else { return }
                    for pattern in matching { matched.insert(pattern.text) }
                    if !arguments.dryRun {
                        do throws(SystemError) {
                            guard try cache.remove(entry) else { return }  // stored anew meanwhile: kept
                        } catch {
                            failure = failure ?? error
                            return
                        }
                    }
                    removed += 1
                    bytes += entry.bytes
                    try report(url: entry.url, path: entry.path, variant: KeyVariant(transform: entry.transform, accept: entry.accept),
                               bytes: entry.bytes)
                }
            } catch where error.errno == .brokenPipe {
                throw error
            } catch {
                console.error(MaintenanceMessages.describe(error))
                return .cacheUnwritable
            }
            if let failure {
                console.error(MaintenanceMessages.describe(failure))
                return .cacheUnwritable
            }
            for pattern in arguments.globs where !matched.contains(pattern) {
                console.error("no entry matches '\(UsageError.visible(pattern))'")
                status = ExitStatus.worse(status, .someFailed)
            }
            status = ExitStatus.worse(status, MaintenanceMessages.reportUnreadable(
                unreadable, of: cache, console: console, consequence: "its entries were not looked at"))
        }
        if !globals.json {
            console.note("\(arguments.dryRun ? "would remove" : "removed") \(Plural.count(removed, "entry", "entries"))"
                + " (\(ByteSize.humanised(bytes))) from namespace '\(cache.location.namespace)'")
        }
        return status
    }

    private func report(url: String?, path: String, variant: KeyVariant?, bytes: Int64) throws(SystemError) {
        if globals.json {
            var object = JSONObject()
            object.add("url", url)
            object.add("transform", variant?.transform)
            object.add("accept", variant?.accept)
            object.add("path", path)
            object.add("bytes", bytes)
            object.add("dry_run", arguments.dryRun)
            try console.output(object.serialized)
        } else if !globals.quiet || arguments.dryRun {
            let label = variant?.label ?? ""
            let shown = label.isEmpty ? "" : " [\(UsageError.visible(label))]"
            try console.output((arguments.dryRun ? "would remove " : "removed ") + UsageError.visible(url ?? path)
                + shown + " (\(ByteSize.humanised(bytes)))")
        }
    }
}

extension RemoveArguments: Subcommand {
    /// The command's name and one-line summary, apart from its table: a run finds its command, and
    /// `help` lists them all, without building every command's table.
    static let name = "remove"
    static let summary = "Remove the entries of some URLs"
    static let spec = CommandSpec(
        name: name, summary: summary,
        description: """
            Removes each URL's entries: the image as served and its thumbnails and shrunk \
            copies. A URL is found by its key, as fetch finds it (its normal form; give \
            the --key-filter it was fetched with), even when its URL log line is lost or \
            its metadata damaged. --match removes the entries whose URL matches a pattern \
            instead, as list matches them (a glob with *, ? or [, else a part of the URL). \
            Each entry is removed under its shard's lock, so fetches, cleans and clears \
            may run meanwhile. Prints what was removed. Exit 1 when a URL given has no \
            entry, or a pattern matches none (the others are still removed).
            """,
        options: [
            .value(.match, metavar: "PATTERN", kind: .text, repeatable: true,
                   help: "Remove the entries whose URL matches PATTERN, as list matches it: a glob, else a part of the URL (repeatable)"),
            .value(.keyFilter, metavar: "FILTER", kind: .suggestions(["strip-query", "keep-query=", "drop-query=", "none"]),
                   help: "The --key-filter the URLs were fetched with, so that their entries are found"),
            .flag(.dryRun, help: "Print what would be removed; remove nothing"),
        ],
        operands: [OperandSpec(name: "URL", kind: .url, help: "a URL whose entries to remove", minimum: 0, maximum: nil)],
        examples: [
            ("imgcache remove https://example.com/logo.png", "that image, and its thumbnails"),
            ("imgcache remove --match 'https://old-cdn.example/*'", "everything from one host"),
        ]
    )

    static func invocation(_ options: ParsedOptions, globals: GlobalOptions) throws(UsageError) -> Invocation {
        .run(globals, Command(try options.removeArguments()))
    }

    static func run(_ command: RemoveCommand) throws(SystemError) -> ExitStatus { try command.run() }
}

/// `remove` arguments from the parsed words.
extension ParsedOptions {
    func removeArguments() throws(UsageError) -> RemoveArguments {
        var arguments = RemoveArguments()
        arguments.urls = operands
        arguments.globs = values[.match] ?? []
        arguments.dryRun = has(.dryRun)
        if let text = last(.keyFilter) {
            guard let filter = CacheKeyFilter(parsing: text) else {
                throw .invalidValue(option: "--key-filter", value: text,
                                    reason: "expected strip-query, keep-query=NAME[,NAME...], drop-query=NAME[,NAME...] or none")
            }
            arguments.keyFilter = filter
        }
        if arguments.urls.isEmpty && arguments.globs.isEmpty {
            throw .missingOperand(command: RemoveArguments.spec.name, operand: "a URL (or --match GLOB)")
        }
        if let empty = arguments.globs.first(where: \.isEmpty) { throw .invalidValue(option: "--match", value: empty, reason: "the pattern is empty") }
        return arguments
    }
}
