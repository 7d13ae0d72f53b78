#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCore

/// `imgcache cache-info` arguments.
public struct CacheInfoArguments: Equatable, Sendable {
    public var allNamespaces = false
    /// Zero the statistics before showing them.
    public var zero = false
    public init() {}
}

/// `imgcache cache-info`: what one namespace (or each) holds, and its limits.
typealias CacheInfoCommand = CommandRun<CacheInfoArguments>

extension CacheInfoCommand {
    func run() throws(SystemError) -> ExitStatus {
        let now = WallClock.now()
        var status = ExitStatus.success
        for (index, cache) in caches.enumerated() {
            let statistics = StatisticsLog(namespaceDirectory: cache.directory)
            if arguments.zero, (try? FileSystem.status(cache.directory)) != nil {
                do { try statistics.zero(now: now) } catch {
                    console.error("namespace '\(cache.location.namespace)': " + MaintenanceMessages.describe(error))
                    return .cacheUnwritable
                }
                console.note("statistics of namespace '\(cache.location.namespace)' zeroed")
            }
            let counts = statistics.read()
            let inspection = cache.settingsInspection
            if !inspection.problems.isEmpty { MaintenanceMessages.reportSettings(inspection, of: cache, console: console) }
            let summary: CacheSummary
            do { summary = try CacheSummary.summarize(cache, now: now) } catch {
                // Nothing of this namespace could be read; the others still are.
                console.error("namespace '\(cache.location.namespace)': " + MaintenanceMessages.describe(error))
                status = ExitStatus.worse(status, .partial)
                continue
            }
            status = ExitStatus.worse(status, MaintenanceMessages.reportUnreadable(
                summary.unreadableShards, of: cache, console: console, consequence: "left out of the counts"))
            guard let remotes = MaintenanceMessages.remotes(cache, environment: environment, console: console, warnUnreadable: true) else { return .usage }
            if globals.json {
                var object = json(summary, settingsProblems: inspection.problems.count)
                object.add("remotes", remotes.remotes.isEmpty ? nil : remotes.listed)
                object.add("remotes_source", remotes.source.rawValue)
                CacheInfoCommand.addStatistics(counts.statistics, since: counts.since, to: &object)
                try console.output(object.serialized)
            } else {
                // What the namespace holds is the data asked for: -q does not hide it.
                if index > 0 { try console.output("") }
                for line in text(summary, now: now) { try console.output(line) }
                try console.output(CacheInfoCommand.row("remotes", "\(remotes.listed) (\(remotes.source.rawValue))"))
                for line in CacheInfoCommand.statisticsText(counts.statistics, since: counts.since, now: now) { try console.output(line) }
            }
        }
        return status
    }

    /// The statistics rows: hits and misses with their share, downloads and their bytes.
    static func statisticsText(_ counts: UsageStatistics, since: Double?, now: Double) -> [String] {
        // In floating point: counts near Int.max must not overflow a sum.
        let total = Double(counts.hits) + Double(counts.misses)
        func share(_ part: Int) -> String {
            let tenths = total == 0 ? 0 : Int((Double(part) * 1000 / total).rounded())
            return total == 0 ? "" : " (\(tenths / 10).\(tenths % 10) %)"
        }
        return [
            row("hits", "\(counts.hits)" + share(counts.hits)),
            row("misses", "\(counts.misses)" + share(counts.misses) + ": \(counts.remoteHits) from remote stores, "
                + "\(counts.downloads) downloaded (\(ByteSize.humanised(counts.downloadedBytes))), \(counts.failures) failed"),
            row("counted", since.map { "since " + Timestamp.local($0) + " (" + Timestamp.age($0, now: now) + "; cache-info --zero)" }
                ?? "since the namespace was made (cache-info --zero restarts)"),
        ]
    }

    static func addStatistics(_ counts: UsageStatistics, since: Double?, to object: inout JSONObject) {
        object.add("hits", counts.hits)
        object.add("misses", counts.misses)
        object.add("remote_hits", counts.remoteHits)
        object.add("downloads", counts.downloads)
        object.add("downloaded_bytes", counts.downloadedBytes)
        object.add("failures", counts.failures)
        object.add("statistics_since", since.map(Timestamp.iso8601))
    }

    /// A label and its value, the values aligned.
    private static func row(_ label: String, _ value: String) -> String {
        let title = label + ":"
        return title + String(repeating: " ", count: max(1, 14 - title.count)) + value
    }

    private func text(_ summary: CacheSummary, now: Double) -> [String] {
        let row = CacheInfoCommand.row
        var lines = [row("namespace", summary.namespace.name), row("path", summary.path)]
        if summary.exists {
            let size = ByteSize.humanised(summary.entries.bytes) + ", " + ByteSize.humanised(summary.entries.allocatedBytes) + " on disk"
            lines.append(row("entries", "\(summary.entries.count) (\(size))"))
        } else {
            lines.append(row("entries", "0 (nothing stored yet)"))
        }
        if let oldest = summary.oldestAccess, let newest = summary.newestAccess {
            lines.append(row("oldest use", Timestamp.local(oldest) + " (" + Timestamp.age(oldest, now: now) + ")"))
            lines.append(row("newest use", Timestamp.local(newest) + " (" + Timestamp.age(newest, now: now) + ")"))
        }
        lines.append(row("failed URLs", String(summary.failedURLs)))
        if summary.temporaries.count > 0 {
            lines.append(row("temporary", "\(summary.temporaries.count) files (\(ByteSize.humanised(summary.temporaries.bytes)))"))
        }
        lines.append(row("max size", "\(summary.limits.maxSize) (\(summary.limits.maxSizeSource.rawValue))"))
        lines.append(row("max age", "\(summary.limits.maxAge) (\(summary.limits.maxAgeSource.rawValue))"))
        lines.append(row("failed TTL", "\(summary.limits.failedTTL) (\(summary.limits.failedTTLSource.rawValue))"))
        lines.append(row("metadata", summary.metadataPlacement == .attribute ? "extended attributes" : "sidecar files"))
        return lines
    }

    private func json(_ summary: CacheSummary, settingsProblems: Int) -> JSONObject {
        var object = JSONObject()
        object.add("namespace", summary.namespace.name)
        object.add("path", summary.path)
        object.add("exists", summary.exists)
        object.add("entries", summary.entries.count)
        object.add("bytes", summary.entries.bytes)
        object.add("allocated_bytes", summary.entries.allocatedBytes)
        object.add("oldest_access", summary.oldestAccess.map(Timestamp.iso8601))
        object.add("newest_access", summary.newestAccess.map(Timestamp.iso8601))
        object.add("failed_urls", summary.failedURLs)
        object.add("temporary_files", summary.temporaries.count)
        object.add("temporary_bytes", summary.temporaries.bytes)
        MaintenanceMessages.addLimits(summary.limits, to: &object)
        object.add("settings_problems", settingsProblems)
        object.add("metadata", summary.metadataPlacement.rawValue)
        return object
    }
}

extension CacheInfoArguments: Subcommand {
    /// The command's name and one-line summary, apart from its table: a run finds its command, and
    /// `help` lists them all, without building every command's table.
    static let name = "cache-info"
    static let summary = "Show what a namespace holds and its limits"
    static let spec = CommandSpec(
        name: name, summary: summary,
        description: """
            Prints the namespace's folder, its entries with their size (the bytes of the \
            images, and the space they take on disk), the oldest and newest last use, the \
            failed URLs remembered, temporary files of stores in progress (or abandoned), \
            the limits clean applies (remembered with clean --remember, or the \
            defaults), the remote stores, and the statistics of fetch and prefetch since \
            they were last zeroed: hits, misses (from remote stores, downloaded, failed) \
            and the bytes downloaded, each process adding its counts once as it ends. \
            Reads directory listings, file sizes and the statistics file.
            """,
        options: [CommandTable.allNamespaces,
                  .flag(.zero, help: "Zero the statistics (hits, misses, downloads, failures) first, as ccache -z does")],
        examples: [
            ("imgcache cache-info", "the default namespace"),
            ("imgcache --json cache-info --all-namespaces", "one JSON object per namespace"),
            ("imgcache cache-info --zero", "start counting hits and misses afresh"),
        ]
    )
    var scope: CommandScope { allNamespaces ? .allNamespaces : .namespace }
    static let reportsSettings = true

    static func invocation(_ options: ParsedOptions, globals: GlobalOptions) throws(UsageError) -> Invocation {
        .run(globals, Command(try options.cacheInfoArguments(globals: globals)))
    }

    static func run(_ command: CacheInfoCommand) throws(SystemError) -> ExitStatus { try command.run() }
}

/// `cache-info` arguments from the parsed words.
extension ParsedOptions {
    func cacheInfoArguments(globals: GlobalOptions) throws(UsageError) -> CacheInfoArguments {
        var arguments = CacheInfoArguments()
        arguments.allNamespaces = try allNamespaces(globals: globals)
        arguments.zero = has(.zero)
        return arguments
    }
}
