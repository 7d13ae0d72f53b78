/// imgcache's exit statuses. Each means one thing, so scripts can branch on it.
public enum ExitStatus: Int32, CaseIterable, Sendable {
    case success = 0
    /// One or more URLs could not be fetched; the others were.
    case someFailed = 1
    /// The command line (or an IMGCACHE_ environment variable) is wrong.
    case usage = 64
    /// The list of URLs (prefetch, fetch -i) cannot be read.
    case noInput = 66
    /// A command or a system library this build needs is not available.
    case unavailable = 69
    /// The system refused what the run needs (a thread, a file descriptor, memory, a decode worker).
    case systemError = 71
    /// The cache cannot be written (permissions, full disk, read-only).
    case cacheUnwritable = 73
    /// The output file (-o) cannot be written.
    case outputFailed = 74
    /// Part of the cache could not be read (a shard folder): what could be
    /// was reported or done, and the part that could not was said.
    case partial = 75
    /// A namespace's settings file cannot be read, or holds a value imgcache
    /// refuses: clean does not guess its limits.
    case configurationError = 78
    /// Stopped by SIGINT (Ctrl-C); the summary so far was printed.
    case interrupted = 130
    /// Standard output was closed by its reader (for example `| head`).
    case brokenPipe = 141
    /// Stopped by SIGTERM; the summary so far was printed.
    case terminated = 143

    /// What the status means, for help and the man page.
    public var meaning: String {
        switch self {
        case .success: return "success"
        case .someFailed: return "one or more URLs failed (each is reported on stderr)"
        case .usage: return "usage error: bad command line or IMGCACHE_ variable"
        case .noInput: return "an input file cannot be read: the list of URLs (prefetch, fetch -i), --cookies, --netrc-file, --cacert"
        case .unavailable: return "command or required system library not available"
        case .systemError: return "the system refused a resource imgcache needs (a thread: ulimit -u, a file descriptor: ulimit -n, memory, a decode worker)"
        case .cacheUnwritable: return "the cache cannot be written"
        case .outputFailed: return "the output file (or the cookie jar, or an export's folder or store) cannot be written, or its name asks for another format than the image's"
        case .partial: return "part of the cache could not be read (each part is reported on stderr); the rest was done"
        case .configurationError: return "a namespace's settings file cannot be read or holds a value imgcache refuses (clean, config)"
        case .interrupted: return "interrupted by SIGINT: transfers aborted, temporary files removed (by a second signal too)"
        case .brokenPipe: return "standard output was closed early (quiet)"
        case .terminated: return "stopped by SIGTERM: transfers aborted, temporary files removed (by a second signal too)"
        }
    }

    /// The statuses the documentation lists.
    public static var documented: [ExitStatus] { allCases }
}

extension ExitStatus {
    /// From least to most serious: a run reports the most serious of its failures,
    /// since a cache that cannot be written fails every URL, not just one; a
    /// bad command line, a closed output and a signal end a run outright.
    private static let severity: [ExitStatus] = [.success, .someFailed, .partial, .noInput, .outputFailed, .configurationError,
                                                 .unavailable, .systemError, .cacheUnwritable, .usage, .brokenPipe, .interrupted,
                                                 .terminated]

    /// The more serious of `a` and `b`.
    public static func worse(_ a: ExitStatus, _ b: ExitStatus) -> ExitStatus {
        (severity.firstIndex(of: a) ?? 0) >= (severity.firstIndex(of: b) ?? 0) ? a : b
    }
}

extension FetchError {
    /// The status a run ends with, at least, when a URL fails so.
    public var exitStatus: ExitStatus {
        switch self {
        // A file the cache could not make for want of a descriptor is the system's limit, not the cache's.
        case .cacheUnwritable(let error) where error.exhaustsResources: return .systemError
        case .cacheUnwritable, .cacheFull: return .cacheUnwritable
        // A library present but not mappable under imgcache's own ulimit -v (or -n) is the system's limit.
        case .libraryMissing(let message) where message.hasSuffix("(ulimit -v)") || message.hasSuffix("(ulimit -n)"): return .systemError
        case .download(_, .systemLimit): return .systemError
        case .libraryMissing: return .unavailable
        case .downloaderUnavailable: return .systemError
        case .requestFileUnusable(_, let status): return status
        case .decodeStopped(_, let failure, _) where failure.isSystemFailure: return .systemError
        default: return .someFailed
        }
    }
}

/// A step that has already said why it failed gives up with the status to exit with.
extension ExitStatus: Error {}
