#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCore

/// `imgcache clean` arguments.
public struct CleanArguments: Equatable, Sendable {
    /// Limits given on the command line (nil: remembered or default).
    public var maxSize: SizeLimit?
    public var maxAge: AgeLimit?
    public var failedTTL: AgeLimit?
    public var remember = false
    public var dryRun = false
    public var allNamespaces = false
    public init() {}
}

/// `imgcache clean`: expire and trim one namespace (or each), under the limits
/// given, remembered or default.
typealias CleanCommand = CommandRun<CleanArguments>

extension CleanCommand {
    func run() throws(SystemError) -> ExitStatus {
        let now = WallClock.now()
        var status = ExitStatus.success
        // SIGINT and SIGTERM stop the clean between shards, and what it removed so far is still said.
        let stop = StopRequest()
        if !arguments.dryRun {
            do { try SignalWatcher.start { signal, _ in stop.stop(signal: signal) } } catch {
                console.warning("cannot watch for SIGINT: \(error); an interruption stops the clean at once")
            }
        }
        for cache in caches {
            if stop.signal != nil { break }
            let limits: CacheLimits
            let outcome: CacheCleaner.Outcome
            // Settings that cannot be used stop this namespace's clean: guessing
            // its limits could remove what a remembered 30 days keeps.
            let inspection = cache.settingsInspection
            if !inspection.problems.isEmpty, !arguments.remember {
                MaintenanceMessages.reportSettings(inspection, of: cache, console: console, refusing: "not cleaned")
                status = ExitStatus.worse(status, .configurationError)
                continue
            }
            do throws(SystemError) {
                let remembered = arguments.remember
                    ? try cache.updateSettings { $0.remember(maxSize: arguments.maxSize, maxAge: arguments.maxAge, failedTTL: arguments.failedTTL) }
                    : inspection.settings
                limits = CacheLimits.resolve(maxSize: arguments.maxSize, maxAge: arguments.maxAge,
                                             failedTTL: arguments.failedTTL, remembered: remembered)
                outcome = try CacheCleaner(cache: cache).clean(limits: limits, now: now, dryRun: arguments.dryRun,
                                                                shouldStop: { stop.signal != nil })
                // The statistics file grows a line per run: its lines become one sum.
                if !arguments.dryRun { try? StatisticsLog(namespaceDirectory: cache.directory).compact() }
            } catch {
                console.error("namespace '\(cache.location.namespace)': " + MaintenanceMessages.describe(error))
                status = ExitStatus.worse(status, .cacheUnwritable)
                continue
            }
            if arguments.remember { console.detail("remembered for namespace '\(cache.location.namespace)': max size \(limits.maxSize), max age \(limits.maxAge), failed TTL \(limits.failedTTL)") }
            switch outcome {
            case .alreadyRunning:
                console.note("another clean of namespace '\(cache.location.namespace)' is running; nothing done")
                if globals.json {
                    var object = JSONObject()
                    object.add("namespace", cache.location.namespace.name)
                    object.add("skipped", "another clean is running")
                    try console.output(object.serialized)
                }
            case .cleaned(let report):
                status = ExitStatus.worse(status, MaintenanceMessages.reportUnreadable(
                    report.unreadableShards, of: cache, console: console, consequence: "not cleaned"))
                // What a dry run would remove is its result: listed whatever -q says.
                for planned in report.planned {
                    try console.output(globals.json ? plannedJSON(planned).serialized : plannedText(planned, now: now))
                }
                if globals.json {
                    try console.output(json(report, namespace: cache.location.namespace).serialized)
                } else if !globals.quiet || report.interrupted {
                    for line in text(report, namespace: cache.location.namespace) { try console.output(line) }
                }
            }
        }
        if let signal = stop.signal {
            console.error("interrupted by \(signal == SIGTERM ? "SIGTERM" : "SIGINT"); the clean stopped between shards")
            return signal == SIGTERM ? .terminated : .interrupted
        }
        return status
    }

    /// A dry run's line for one file: what, why, how large, its URL.
    private func plannedText(_ planned: CacheCleaner.PlannedRemoval, now: Double) -> String {
        let why: String
        switch planned.reason {
        // How long, in words: "unused for 25 seconds", never "unused for just now".
        case .expired: why = "unused for \(TimeSpan(seconds: max(1, now - planned.lastUse)).roughDescription)"
        case .evicted: why = "least recently used (\(Timestamp.age(planned.lastUse, now: now)))"
        case .abandoned: why = "abandoned temporary file"
        case .leftover: why = "leftover"
        }
        return "would remove " + UsageError.visible(planned.path) + " (\(ByteSize.humanised(planned.bytes)), \(why))"
            + (planned.url.map { "  " + UsageError.visible($0) } ?? "")
            + (planned.variant.map { " [\(UsageError.visible($0.label))]" } ?? "")
    }

    private func plannedJSON(_ planned: CacheCleaner.PlannedRemoval) -> JSONObject {
        var object = JSONObject()
        object.add("path", planned.path)
        object.add("url", planned.url)
        object.add("transform", planned.variant?.transform)
        object.add("accept", planned.variant?.accept)
        object.add("reason", planned.reason.rawValue)
        object.add("bytes", planned.bytes)
        object.add("last_use", Timestamp.iso8601(planned.lastUse))
        return object
    }

    private func text(_ report: CacheCleaner.Report, namespace: Namespace) -> [String] {
        let verb = report.dryRun ? "would remove" : "removed"
        let removedCount = report.expired.count + report.evicted.count
        let removedBytes = report.expired.bytes + report.evicted.bytes
        var reasons: [String] = []
        if report.expired.count > 0 { reasons.append("\(report.expired.count) unused for \(report.limits.maxAge)") }
        if report.evicted.count > 0, case .bytes(let maxSize) = report.limits.maxSize {
            reasons.append("\(report.evicted.count) least recently used, to get under \(ByteSize.humanised(maxSize / 2))")
        }
        var lines = ["namespace '\(namespace)': \(verb) \(Plural.count(removedCount, "entry", "entries")) (\(ByteSize.humanised(removedBytes)))"
            + (report.interrupted ? " before it was interrupted" : "")
            + (reasons.isEmpty ? "" : ": " + reasons.joined(separator: "; "))]
        if report.temporaries.count > 0 {
            lines.append("  \(verb) \(Plural.count(report.temporaries.count, "abandoned temporary file")) (\(ByteSize.humanised(report.temporaries.bytes)))")
        }
        if report.leftovers > 0 { lines.append("  \(verb) \(Plural.count(report.leftovers, "leftover")) (orphaned metadata, links)") }
        if report.failedURLs > 0 { lines.append("  \(verb) \(Plural.count(report.failedURLs, "failed URL")) older than \(report.limits.failedTTL)") }
        if report.spared > 0 { lines.append("  kept \(Plural.count(report.spared, "entry", "entries")) used while cleaning") }
        lines.append("  \(report.dryRun ? "would keep" : "kept") \(Plural.count(report.remaining.count, "entry", "entries")), "
            + "\(ByteSize.humanised(report.remaining.allocatedBytes)) on disk (max size \(report.limits.maxSize), max age \(report.limits.maxAge))")
        return lines
    }

    private func json(_ report: CacheCleaner.Report, namespace: Namespace) -> JSONObject {
        var object = JSONObject()
        object.add("namespace", namespace.name)
        object.add("dry_run", report.dryRun)
        object.add("interrupted", report.interrupted)
        object.add("removed_entries", report.expired.count + report.evicted.count)
        object.add("removed_bytes", report.expired.bytes + report.evicted.bytes)
        object.add("removed_allocated_bytes", report.expired.allocatedBytes + report.evicted.allocatedBytes)
        object.add("expired_entries", report.expired.count)
        object.add("evicted_entries", report.evicted.count)
        object.add("removed_temporary_files", report.temporaries.count)
        object.add("removed_leftovers", report.leftovers)
        object.add("removed_failed_urls", report.failedURLs)
        object.add("spared_entries", report.spared)
        object.add("remaining_entries", report.remaining.count)
        object.add("remaining_bytes", report.remaining.bytes)
        object.add("remaining_allocated_bytes", report.remaining.allocatedBytes)
        MaintenanceMessages.addLimits(report.limits, to: &object)
        return object
    }
}

extension CleanArguments: Subcommand {
    /// The command's name and one-line summary, apart from its table: a run finds its command, and
    /// `help` lists them all, without building every command's table.
    static let name = "clean"
    static let summary = "Expire unused entries and trim the namespace to size"
    static let spec = CommandSpec(
        name: name, summary: summary,
        description: """
            Removes entries not used for --max-age; then, if the entries still take more \
            than --max-size on disk, removes the least recently used until they take less \
            than half of it. Also removes temporary files left by interrupted stores, \
            expired failed URLs (kept \(FailedURLStore.defaultTTL)), and symbolic links planted in the \
            cache (never what they point to). Safe while other imgcache processes use the \
            namespace: an entry used since the scan is kept. A second clean of the same \
            namespace notices the first, says so and exits 0. Limits not given come from \
            the namespace (clean --remember), else the defaults: --max-age \(CacheLimits.defaultMaxAge), \
            --max-size \(CacheLimits.defaultMaxSize).
            """,
        options: [
            .value(.maxSize, metavar: "SIZE", kind: .text,
                   help: "Most disk space the entries may take (500M, 2G, 1.5GiB, bytes; 'none' for no limit); with --all-namespaces, each namespace's own"),
            .value(.maxAge, metavar: "AGE", kind: .text,
                   help: "Remove entries not used for this long (45s, 30m, 12h, 7d, 2w; 'never')"),
            .value(.failedTtl, metavar: "AGE", kind: .text,
                   help: "Remove failed URLs remembered for longer than AGE (default 24h; 'never'); fetch honours a remembered one"),
            .flag(.remember, help: "Save the --max-size, --max-age and --failed-ttl given as the namespace's, for later runs"),
            .flag(.dryRun, help: "List each file that would be removed, why and its URL (also with -q); remove nothing"),
            CommandTable.allNamespaces,
        ],
        examples: [
            ("imgcache clean --max-size 2G --max-age 30d --remember", "set the limits once, and clean"),
            ("imgcache clean -q", "a cron line: the remembered limits"),
            ("imgcache clean --dry-run --max-age 1d", "what a day's limit would remove"),
        ]
    )
    var scope: CommandScope { allNamespaces ? .allNamespaces : .namespace }
    static let reportsSettings = true

    static func invocation(_ options: ParsedOptions, globals: GlobalOptions) throws(UsageError) -> Invocation {
        .run(globals, Command(try options.cleanArguments(globals: globals)))
    }

    static func run(_ command: CleanCommand) throws(SystemError) -> ExitStatus { try command.run() }
}

/// `clean` arguments from the parsed words.
extension ParsedOptions {
    func cleanArguments(globals: GlobalOptions) throws(UsageError) -> CleanArguments {
        var arguments = CleanArguments()
        arguments.maxSize = try sizeLimit()
        arguments.maxAge = try ageLimit()
        arguments.failedTTL = try failedTTL()
        arguments.remember = has(.remember)
        arguments.dryRun = has(.dryRun)
        arguments.allNamespaces = has(.allNamespaces)
        if arguments.remember {
            if arguments.maxSize == nil && arguments.maxAge == nil && arguments.failedTTL == nil {
                throw .requires("--remember", "--max-size, --max-age or --failed-ttl")
            }
            if arguments.dryRun { throw .conflictingOptions("--remember", "--dry-run", reason: "a dry run changes nothing") }
            if arguments.allNamespaces {
                throw .conflictingOptions("--remember", "--all-namespaces", reason: "limits are remembered per namespace")
            }
        }
        arguments.allNamespaces = try allNamespaces(globals: globals)
        return arguments
    }
}
