#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCore

/// `imgcache remove URL...|--match GLOB`: some entries of a namespace, each
/// under its shard's lock.
typealias RemoveCommand = CommandRun<RemoveArguments>

extension RemoveCommand {
    func run() throws(SystemError) -> ExitStatus {
        // Entries are named by the URL as it was logged: without a fragment, a password shown as ***.
        let wanted = Set(arguments.urls.map { RemoteURL.redacted(URLText.withoutFragment($0)) })
        var found: Set<String> = []
        var removed = 0, bytes: Int64 = 0
        var failure: SystemError?
        do {
            try CacheListing.forEach(in: cache.directory) { (entry) throws(SystemError) in
                guard let url = entry.url else { return }
                let named = wanted.contains(url)
                guard named || arguments.globs.contains(where: { fnmatch($0, url, 0) == 0 }) else { return }
                if named { found.insert(url) }
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
                try report(entry)
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
        let missing = arguments.urls.filter { !found.contains(RemoteURL.redacted(URLText.withoutFragment($0))) }
        for url in missing { console.error("not in the cache: \(UsageError.visible(RemoteURL.redacted(url)))") }
        if !globals.json {
            console.note("\(arguments.dryRun ? "would remove" : "removed") \(Plural.count(removed, "entry", "entries"))"
                + " (\(ByteSize.humanised(bytes))) from namespace '\(cache.location.namespace)'")
        }
        return missing.isEmpty ? .success : .someFailed
    }

    private func report(_ entry: ListedEntry) throws(SystemError) {
        if globals.json {
            var object = entry.json
            object.add("dry_run", arguments.dryRun)
            try console.output(object.serialized)
        } else if !globals.quiet || arguments.dryRun {
            let transform = entry.transform.map { " [\(UsageError.visible($0))]" } ?? ""
            try console.output((arguments.dryRun ? "would remove " : "removed ") + UsageError.visible(entry.url ?? entry.path)
                + transform + " (\(ByteSize.humanised(entry.bytes)))")
        }
    }
}
