#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCore

/// `imgcache list` arguments.
public struct ListArguments: Equatable, Sendable {
    /// How `list` orders its lines.
    public enum Order: String, Equatable, Sendable { case recent, size, url }
    public var pattern: String?
    public var order: Order?
    public var failed = false
    /// `--html`: a contact sheet instead of lines.
    public var html = false
    public init() {}
}

/// `imgcache list [PATTERN]`: the entries of a namespace (or its failed URLs).
typealias ListCommand = CommandRun<ListArguments>

extension ListCommand {
    func run() throws(SystemError) -> ExitStatus {
        if arguments.failed { return try listFailed() }
        let now = WallClock.now()
        var count = 0, bytes: Int64 = 0
        var kept: [ListedEntry] = []
        // A sheet shows the images as served (their variants are how it shows them).
        let keeps = { (entry: ListedEntry) in !arguments.html || (entry.transform == nil && entry.url != nil) }
        var unreadable: [SystemError] = []
        do {
            unreadable = try CacheListing.forEach(in: cache.directory) { (entry) throws(SystemError) in
                guard ListCommand.matches(arguments.pattern, entry.url), keeps(entry) else { return }
                count += 1
                bytes += entry.bytes
                // Unsorted, each line as it is found: the first come at once, and memory stays flat.
                if arguments.order == nil && !arguments.html { try show(entry, now: now) } else { kept.append(entry) }
            }
        } catch where error.errno == .brokenPipe {
            throw error
        } catch where error.path?.hasPrefix(cache.directory) == true {
            // Read only: what could not be read makes the answer partial, not the cache unwritable.
            console.error(MaintenanceMessages.describe(error))
            return .partial
        }
        switch arguments.order {
        case .recent?: kept.sort { $0.lastUse > $1.lastUse }
        case .size?: kept.sort { $0.bytes > $1.bytes }
        case .url?: kept.sort { ($0.url ?? "") < ($1.url ?? "") }
        case nil: break
        }
        if arguments.html { return try sheet(of: kept, bytes: bytes, unreadable: unreadable) }
        for entry in kept { try show(entry, now: now) }
        if !globals.json {
            console.note("\(Plural.count(count, "entry", "entries")), \(ByteSize.humanised(bytes))"
                + (arguments.pattern.map { " matching '\(UsageError.visible($0))'" } ?? "") + " in namespace '\(cache.location.namespace)'")
        }
        return MaintenanceMessages.reportUnreadable(unreadable, of: cache, console: console, consequence: "its entries are not listed")
    }

    /// `--html`: the contact sheet of `entries`, then the namespace's failed URLs (matching the pattern).
    private func sheet(of entries: [ListedEntry], bytes: Int64, unreadable: [SystemError]) throws(SystemError) -> ExitStatus {
        var failures: [(url: String, reason: String, at: Double?)] = []
        if let records = try? FailedURLStore(namespaceDirectory: cache.directory).records() {
            failures = records.filter { ListCommand.matches(arguments.pattern, $0.url) }.sorted { $0.failedAt > $1.failedAt }
                .map { ($0.url, $0.reason, $0.failedAt) }
        }
        let items = entries.map { entry in
            ContactSheetPage.Item(url: entry.url ?? entry.path, format: entry.format, width: entry.width, height: entry.height,
                                  frames: entry.frames, bytes: entry.bytes, lastUse: entry.lastUse)
        }
        let title = "imgcache: namespace '\(cache.location.namespace)'" + (arguments.pattern.map { ", URLs matching '\($0)'" } ?? "")
        let summary = "\(Plural.count(entries.count, "image")), \(ByteSize.humanised(bytes)); \(Plural.count(failures.count, "failed URL"))"
        let status = try ContactSheet(cache: cache, console: console, environment: environment)
            .write(title: title, items: items, failures: failures, summary: summary) { (chunk) throws(SystemError) in
                try console.output(String(chunk.dropLast()))
            }
        console.note(summary + " in the sheet")
        return ExitStatus.worse(status, MaintenanceMessages.reportUnreadable(unreadable, of: cache, console: console,
                                                                            consequence: "its entries are not in the sheet"))
    }

    /// Whether `url` is kept by `pattern` (every URL without one), as `remove --match` decides.
    static func matches(_ pattern: String?, _ url: String?) -> Bool {
        pattern.map { URLPattern($0).matches(url) } ?? true
    }

    private func show(_ entry: ListedEntry, now: Double) throws(SystemError) {
        if globals.json {
            var object = entry.json
            object.add("format", entry.format?.rawValue)
            object.add("width", entry.width.map(Int64.init))
            object.add("height", entry.height.map(Int64.init))
            object.add("frames", entry.frames.map(Int64.init))
            object.add("last_use", Timestamp.iso8601(entry.lastUse))
            object.add("stored", entry.storedAt.map(Timestamp.iso8601))
            try console.output(object.serialized)
            return
        }
        let size = ByteSize.humanised(entry.bytes)
        let pixels = entry.width.flatMap { width in entry.height.map { "\(width)x\($0)" } } ?? "-"
        let url = entry.url.map(UsageError.visible) ?? "(URL unknown) " + entry.path
        let label = KeyVariant(transform: entry.transform, accept: entry.accept).label
        let transform = label.isEmpty ? "" : " [\(UsageError.visible(label))]"
        try console.output(Timestamp.local(entry.lastUse) + "  " + ListCommand.padded(size, 9) + "  "
            + ListCommand.padded(entry.format?.rawValue ?? "-", 4) + "  " + ListCommand.padded(pixels, 11) + "  " + url + transform)
    }

    private func listFailed() throws(SystemError) -> ExitStatus {
        let now = WallClock.now()
        let ttl = cache.settings.failedTTL ?? FailedURLStore.defaultTTL
        var records: [FailedURLStore.Record]
        do { records = try FailedURLStore(namespaceDirectory: cache.directory).records() } catch {
            console.error(MaintenanceMessages.describe(error))
            return .cacheUnwritable
        }
        records = records.filter { ListCommand.matches(arguments.pattern, $0.url) }
        switch arguments.order {
        case .url?: records.sort { $0.url < $1.url }
        default: records.sort { $0.failedAt > $1.failedAt }  // the latest failure first
        }
        for record in records {
            let expired = ttl.isExpired(record.failedAt, now: now)
            if globals.json {
                var object = JSONObject()
                object.add("url", record.url)
                object.add("reason", record.reason)
                object.add("failed_at", Timestamp.iso8601(record.failedAt))
                object.add("expired", expired)
                object.add("scope", ListCommand.scopeName(record.scope))
                try console.output(object.serialized)
            } else {
                let age = Timestamp.age(record.failedAt, now: now) + (expired ? " (expired)" : "")
                try console.output(Timestamp.local(record.failedAt) + "  " + ListCommand.padded(age, 22) + "  "
                    + UsageError.visible(record.url) + "  " + UsageError.visible(record.reason))
            }
        }
        if !globals.json {
            console.note("\(Plural.count(records.count, "failed URL")) in namespace '\(cache.location.namespace)' (failed TTL \(ttl))")
        }
        return .success
    }

    /// Which requests a failure answers, as JSON says it.
    static func scopeName(_ scope: FailedURLStore.Scope) -> String {
        let requests = scope.request.isPlain ? "plain requests" : "requests with the same headers, credentials and cookies"
        return requests + (scope.sizeLimitUpTo.map { ", size limit up to \($0)" } ?? "")
    }

    static func padded(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }
}

extension ListArguments: Subcommand {
    /// The command's name and one-line summary, apart from its table: a run finds its command, and
    /// `help` lists them all, without building every command's table.
    static let name = "list"
    static let summary = "List the cached images (or the failed URLs) of a namespace"
    static let spec = CommandSpec(
        name: name, summary: summary,
        description: """
            Prints a line per entry: its last use, size, format, pixel size and URL (a \
            thumbnail's transform after the URL, in brackets), a shard at a time, so that \
            the first lines come at once and memory stays flat however large the namespace. \
            PATTERN keeps the URLs it matches: a glob (*, ?, [...]) matched against the whole \
            URL, or, without those characters, any URL that contains it. --sort orders \
            the lines, after reading them all. --failed lists the failed URLs instead: when \
            each failed, why, and whether it has expired. Reads only: safe beside every \
            other command.
            """,
        options: [
            .value(.sort, metavar: "ORDER", kind: .choice(["recent", "size", "url"]),
                   help: "recent (most recently used first), size (largest first) or url (alphabetical); default: cache order"),
            .flag(.failed, help: "List the failed URLs instead, with their causes and ages"),
            .value(.match, metavar: "PATTERN", kind: .text, help: "Keep the URLs matching PATTERN, as the PATTERN operand does (as remove --match)"),
            .flag(.html, help: "Write a contact sheet instead: one static page of thumbnails (made through the variant cache, inline), each with its URL, format, size, bytes and last use, then the failed URLs and why"),
        ],
        operands: [OperandSpec(name: "PATTERN", kind: .text, help: "keep URLs matching this glob, or containing this text",
                               minimum: 0, maximum: 1)],
        examples: [
            ("imgcache list", "every entry"),
            ("imgcache list 'https://cdn.example/*.png' --sort size", "the PNGs from one host, largest first"),
            ("imgcache --json list | jq -r 'select(.bytes > 1000000) | .url'", "the URLs of the entries over 1 MB"),
            ("imgcache list --failed", "what failed, and why"),
            ("imgcache list --html 'https://cdn.example/*' > sheet.html", "a page of thumbnails to look at"),
        ]
    )

    static func invocation(_ options: ParsedOptions, globals: GlobalOptions) throws(UsageError) -> Invocation {
        .run(globals, Command(try options.listArguments(globals: globals)))
    }

    static func run(_ command: ListCommand) throws(SystemError) -> ExitStatus { try command.run() }
}

/// `list` arguments from the parsed words.
extension ParsedOptions {
    func listArguments(globals: GlobalOptions) throws(UsageError) -> ListArguments {
        var arguments = ListArguments()
        arguments.html = has(.html)
        if arguments.html, has(.failed) { throw .conflictingOptions("--html", "--failed", reason: "the sheet lists the failed URLs after the images") }
        if arguments.html, globals.json { throw .conflictingOptions("--html", "--json", reason: "both write to standard output") }
        if let match = last(.match), let operand = operands.first, match != operand {
            throw .conflictingOptions("--match \(match)", "the PATTERN \(operand)", reason: "give one pattern")
        }
        arguments.pattern = last(.match) ?? operands.first
        arguments.order = last(.sort).flatMap(ListArguments.Order.init(rawValue:))
        arguments.failed = has(.failed)
        return arguments
    }
}
