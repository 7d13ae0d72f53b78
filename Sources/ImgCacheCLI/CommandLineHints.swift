import ImgCacheCore

/// The library's errors say what went wrong in its own terms; the command line
/// adds which option changes it, since only here are there options.
extension FetchError {
    /// The message, with the option that would have answered otherwise.
    var commandLineMessage: String {
        switch self {
        case .tooManyPixels: return message + "; --max-pixels raises the limit"
        case .blacklisted: return message + "; --retry-failed tries it now"
        case .notCached: return message + " (--cache-only)"
        case .download(_, .tlsCertificate): return message + " (use -k to skip verification)"
        default: return message
        }
    }
}

extension CacheLocation.ResolutionError {
    /// The description, with the options that choose the folder.
    var commandLineMessage: String {
        switch self {
        case .noHome: return description + " (use --cache-dir or IMGCACHE_DIR)"
        case .invalidNamespace(fromEnvironment: false, let error): return "invalid namespace from --namespace: \(error)"
        case .invalidNamespace: return description
        }
    }
}
