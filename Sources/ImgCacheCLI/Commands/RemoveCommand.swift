#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCore

/// `imgcache remove URL...|--match GLOB`: some entries of a namespace, each
/// under its shard's lock.
typealias RemoveCommand = CommandRun<RemoveArguments>

extension RemoveCommand {
    func run() throws(SystemError) -> ExitStatus {
        var removed = 0, bytes: Int64 = 0
        var status = ExitStatus.success
        // By URL: a lookup of the key fetch would use, then its variants' keys.
        for given in arguments.urls {
            let url = URLText.withoutFragment(given)
            let key = CacheKey(arguments.keyFilter.key(for: URLText.normalized(url)))
            var files: [DiskCache.RemovedFile]
            do {
                files = try cache.removeEntry(for: key, dryRun: arguments.dryRun)
                for (variant, transform) in cache.variantKeys(of: key, url: url) {
                    files += try cache.removeEntry(for: variant, transform: transform, dryRun: arguments.dryRun)
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
                try report(url: RemoteURL.redacted(url), path: file.path, transform: file.transform, bytes: file.bytes)
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
                    try report(url: entry.url, path: entry.path, transform: entry.transform, bytes: entry.bytes)
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

    private func report(url: String?, path: String, transform: String?, bytes: Int64) throws(SystemError) {
        if globals.json {
            var object = JSONObject()
            object.add("url", url)
            object.add("transform", transform)
            object.add("path", path)
            object.add("bytes", bytes)
            object.add("dry_run", arguments.dryRun)
            try console.output(object.serialized)
        } else if !globals.quiet || arguments.dryRun {
            let shown = transform.map { " [\(UsageError.visible($0))]" } ?? ""
            try console.output((arguments.dryRun ? "would remove " : "removed ") + UsageError.visible(url ?? path)
                + shown + " (\(ByteSize.humanised(bytes)))")
        }
    }
}

extension RemoveArguments: Subcommand {
    static var spec: CommandSpec { CommandTable.remove }

    static func invocation(_ options: ParsedOptions, globals: GlobalOptions) throws(UsageError) -> Invocation {
        .run(globals, Command(try options.removeArguments()))
    }

    static func run(_ command: RemoveCommand) throws(SystemError) -> ExitStatus { try command.run() }
}
