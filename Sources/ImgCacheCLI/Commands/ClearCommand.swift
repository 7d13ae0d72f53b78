import ImgCacheCore

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
                        if failed.forget(url: url) {
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
                    object.add("removed_entries", report.entries.count)
                    object.add("removed_bytes", report.entries.bytes)
                    object.add("removed_allocated_bytes", report.entries.allocatedBytes)
                    object.add("removed_temporary_files", report.temporaries)
                    object.add("removed_leftovers", report.leftovers)
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
    static var spec: CommandSpec { CommandTable.clear }
    var scope: CommandScope { allNamespaces ? .allNamespaces : .namespace }

    static func invocation(_ options: ParsedOptions, globals: GlobalOptions) throws(UsageError) -> Invocation {
        .run(globals, Command(try options.clearArguments(globals: globals)))
    }

    static func run(_ command: ClearCommand) throws(SystemError) -> ExitStatus { try command.run() }
}
