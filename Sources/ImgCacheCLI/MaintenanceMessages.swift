#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCore

/// Wording shared by cache-info, clean and clear.
enum MaintenanceMessages {
    /// A failure while reading or changing the cache, said plainly.
    static func describe(_ error: SystemError) -> String {
        if error.errno == .tooManySymbolicLinks, let path = error.path {
            return "\(path) is a symbolic link; imgcache does not follow links inside the cache"
        }
        return error.description
    }

    /// The remote stores of `cache`'s namespace (`given`, else IMGCACHE_REMOTE,
    /// else remembered); nil after saying that IMGCACHE_REMOTE is invalid.
    static func remotes(_ cache: DiskCache, given: [RemoteSpec]? = nil, environment: Environment, console: Console,
                        warnUnreadable: Bool = false) -> RemoteSelection? {
        do {
            let selection = try RemoteSelection.resolve(given: given, environment: environment, remembered: cache.settings,
                                                        trustsCredentials: NamespaceSettings.writableByUserAlone(in: cache.directory))
            if warnUnreadable {
                for (text, reason) in selection.unreadable { console.warning("ignoring the remembered remote '\(text)': \(reason)") }
            }
            return selection
        } catch {
            console.error("invalid IMGCACHE_REMOTE: \(error)")
            return nil
        }
    }

    /// Says what in a namespace's settings file cannot be used: an error
    /// when the command stops for it (`refusing`: what it did not do), else a
    /// warning (`instead`: what is done about it; by default it is ignored).
    static func reportSettings(_ inspection: NamespaceSettings.Inspection, of cache: DiskCache, console: Console, refusing: String? = nil,
                               instead: String = "ignored", advise: Bool = true) {
        let file = ControlCharacters.escaped(inspection.path)
        for problem in inspection.problems {
            let line = "namespace '\(cache.location.namespace)': settings file \(file) \(problem.hasPrefix("line") ? "has a bad " + problem : problem)"
            if let refusing { console.error(line + "; " + refusing) } else { console.warning(line + "; " + instead) }
        }
        if refusing != nil, advise {
            console.plain("fix or remove it, or set the limits again with 'imgcache -n \(cache.location.namespace) config --reset' "
                + "(or config --max-size SIZE --max-age AGE)")
        }
    }

    /// Says, once each, which shard folders could not be read and what
    /// that cost (`consequence`); the status a command ends with for it.
    static func reportUnreadable(_ errors: [SystemError], of cache: DiskCache, console: Console, consequence: String) -> ExitStatus {
        // An error, not a warning: it decides the exit status, so -q still says it.
        for error in errors {
            console.error("namespace '\(cache.location.namespace)': \(describe(error)); \(consequence)")
        }
        return errors.isEmpty ? .success : .partial
    }

    /// An age in seconds for JSON; null for never.
    private static func seconds(_ age: AgeLimit) -> JSONValue? {
        switch age {
        case .never: return nil
        // Whole seconds, as JSON.md promises (a limit under a second counts as one).
        case .seconds(let seconds): return .integer(Int64(max(1, min(seconds, TimeSpan.maximum)).rounded()))
        }
    }

    static func addLimits(_ limits: CacheLimits, to object: inout JSONObject) {
        switch limits.maxSize {
        case .unlimited: object.add("max_size", nil as Int64?)
        case .bytes(let bytes): object.add("max_size", bytes)
        }
        object.add("max_size_source", limits.maxSizeSource.rawValue)
        object.add("max_age", seconds(limits.maxAge))
        object.add("max_age_source", limits.maxAgeSource.rawValue)
        object.add("failed_ttl", seconds(limits.failedTTL))
        object.add("failed_ttl_source", limits.failedTTLSource.rawValue)
    }
}
