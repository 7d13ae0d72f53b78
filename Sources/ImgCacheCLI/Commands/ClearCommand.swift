import ImgCacheCore

/// `imgcache clear` arguments.
public struct ClearArguments: Equatable, Sendable {
    /// Forget the failed URLs instead of removing entries.
    public var failedOnly = false
    /// With `failedOnly`: forget only these URLs' failures.
    public var failedURLs: [String] = []
    public var allNamespaces = false
    public init() {}
}

/// `imgcache clear`: every entry of one namespace (or each), or its failed URLs.
typealias ClearCommand = CommandRun<ClearArguments>

extension ClearCommand {
    func run() throws(SystemError) -> ExitStatus {
        let now = WallClock.now()
        var status = ExitStatus.success
        for cache in caches {
            let namespace = cache.location.namespace
            let failed = FailedURLStore(namespaceDirectory: cache.directory)
            var object = JSONObject()
            object.add("namespace", namespace.name)
            var lines: [String] = []
            var missing = false
            do { missing = try FileSystem.status(cache.directory) == nil } catch {}
            if missing {
                // Nothing to clear; most likely the name is mistyped.
                console.note("namespace '\(namespace)' does not exist under \(cache.location.root)")
            }
            do throws(SystemError) {
                if !arguments.failedURLs.isEmpty {
                    var forgotten = 0
                    for url in arguments.failedURLs {
                        if failed.forget(url: url, key: CredentialKey(cache: cache)) {
                            forgotten += 1
                        } else {
                            // Forgetting is idempotent, as rm -f is: what was asked for holds.
                            console.note("not on the failed-URL list: \(UsageError.visible(RemoteURL.redacted(url)))")
                        }
                    }
                    object.add("removed_failed_urls", forgotten)
                    lines.append("namespace '\(namespace)': forgot \(Plural.count(forgotten, "failed URL"))")
                } else if arguments.failedOnly {
                    let forgotten = try failed.clear()
                    object.add("removed_failed_urls", forgotten)
                    lines.append("namespace '\(namespace)': forgot \(Plural.count(forgotten, "failed URL"))")
                } else {
                    let report = try CacheClearer(cache: cache).clear(now: now)
                    status = ExitStatus.worse(status, MaintenanceMessages.reportUnreadable(
                        report.unreadableShards, of: cache, console: console, consequence: "not cleared"))
                    if report.unwritable { status = ExitStatus.worse(status, .cacheUnwritable) }
                    object.add("removed_entries", report.entries.count)
                    object.add("removed_bytes", report.entries.bytes)
                    object.add("removed_allocated_bytes", report.entries.allocatedBytes)
                    object.add("removed_temporary_files", report.temporaries)
                    object.add("removed_leftovers", report.leftovers)
                    object.add("unreadable_shards", report.unreadableShards.count)
                    lines.append("namespace '\(namespace)': removed \(Plural.count(report.entries.count, "entry", "entries")) (\(ByteSize.humanised(report.entries.bytes)))")
                    let kept = try failed.count(ttl: FailedURLStore.defaultTTL, now: now)
                    if kept.remembered > kept.expired {
                        lines.append("  kept \(Plural.count(kept.remembered - kept.expired, "failed URL")) (clear --failed forgets them)")
                    }
                }
            } catch {
                console.error("namespace '\(namespace)': " + MaintenanceMessages.describe(error))
                status = .cacheUnwritable
                continue
            }
            if globals.json {
                try console.output(object.serialized)
            } else if !globals.quiet {
                for line in lines { try console.output(line) }
            }
        }
        return status
    }
}

extension ClearArguments: Subcommand {
    /// The command's name and one-line summary, apart from its table: a run finds its command, and
    /// `help` lists them all, without building every command's table.
    static let name = "clear"
    static let summary = "Remove every entry of a namespace (or its failed URLs)"
    static let spec = CommandSpec(
        name: name, summary: summary,
        description: """
            Removes every entry of the namespace, shard by shard, so that concurrent readers \
            see an entry whole or not at all. Stores running at the same time finish \
            normally. Remembered limits and failed URLs are kept; --failed empties the \
            failed-URL list instead, and leaves the entries. Symbolic links in the cache \
            are removed, never followed.
            """,
        options: [
            .flag(.failed, help: "Forget the failed URLs only (or only the URLs given, each if remembered); keep the entries"),
            CommandTable.allNamespaces,
        ],
        operands: [OperandSpec(name: "URL", kind: .url, help: "with --failed: forget only this URL's failure",
                               minimum: 0, maximum: nil)],
        examples: [
            ("imgcache clear -n thumbnails", "empty the 'thumbnails' namespace"),
            ("imgcache clear --failed", "try every failed URL again next time"),
            ("imgcache clear --failed https://example.com/logo.png", "try that one again next time"),
        ]
    )
    var scope: CommandScope { allNamespaces ? .allNamespaces : .namespace }

    static func invocation(_ options: ParsedOptions, globals: GlobalOptions) throws(UsageError) -> Invocation {
        .run(globals, Command(try options.clearArguments(globals: globals)))
    }

    static func run(_ command: ClearCommand) throws(SystemError) -> ExitStatus { try command.run() }
}

/// `clear` arguments from the parsed words.
extension ParsedOptions {
    func clearArguments(globals: GlobalOptions) throws(UsageError) -> ClearArguments {
        var arguments = ClearArguments()
        arguments.failedOnly = has(.failed)
        if !operands.isEmpty {
            guard arguments.failedOnly else { throw .requires("URL operands", "--failed") }
            if has(.allNamespaces) { throw .conflictingOptions("URL operands", "--all-namespaces", reason: "a URL's failure is one namespace's") }
            arguments.failedURLs = operands
        }
        arguments.allNamespaces = try allNamespaces(globals: globals)
        return arguments
    }
}
