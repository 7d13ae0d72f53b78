import ImgCacheCore

/// The library's errors say what went wrong in its own terms; the command line
/// adds which option changes it, since only here are there options.
extension FetchError {
    /// The message, with the option that would have answered otherwise.
    var commandLineMessage: String {
        switch self {
        case .tooManyPixels:
            // The option goes with the limit it sets: "…over the limit of 100 megapixels (--max-pixels); nothing was stored".
            let tail = "; nothing was stored"
            guard message.hasSuffix(tail) else { return message + " (--max-pixels)" }
            return message.dropLast(tail.count) + " (--max-pixels)" + tail
        case .blacklisted: return message + "; --retry-failed tries it now"
        case .notCached: return message + " (--cache-only)"
        case .download(_, let cause): return message + (cause.commandLineHint.map { " (\($0))" } ?? "")
        default: return message
        }
    }
}

extension DownloadError {
    /// The option that gets past this failure, said as advice; nil when none does.
    var commandLineHint: String? {
        if case .tlsCertificate = self { return "use -k to skip verification" }
        return nil
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
