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
            let selection = try RemoteSelection.resolve(given: given, environment: environment, namespaceDirectory: cache.directory)
            if warnUnreadable {
                for (text, reason) in selection.unreadable { console.warning("ignoring the remembered remote '\(text)': \(reason)") }
            }
            return selection
        } catch {
            console.error("invalid IMGCACHE_REMOTE: \(error)")
            return nil
        }
    }

    /// An age in seconds for JSON; null for never.
    private static func seconds(_ age: AgeLimit) -> JSONValue? {
        switch age {
        case .never: return nil
        case .seconds(let seconds): return seconds == seconds.rounded() ? .integer(Int64(seconds)) : .number(seconds)
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
