import ImgCacheCore

/// The library's errors say what went wrong in its own terms; the command line
/// adds which option changes it, since only here are there options.
extension FetchError {
    /// The message, naming the option that would have answered otherwise.
    var commandLineMessage: String {
        let text = message(naming: { setting in
            switch setting {
            case .pixelLimit: return "--max-pixels"
            case .retryFailed: return "--retry-failed"
            case .cacheOnly: return "--cache-only"
            case .decodeTime: return "--max-decode-time"
            case .decodeMemory: return "--max-decode-memory"
            }
        })
        if case .download(_, let cause) = self { return text + cause.commandLineHint }
        return text
    }
}

extension DownloadError {
    /// The option that gets past this failure, as advice to append
    /// (" (use -k to skip verification)"); empty when none does.
    var commandLineHint: String {
        if case .tlsCertificate = self { return " (use -k to skip verification)" }
        return ""
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
