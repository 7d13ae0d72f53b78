/// imgcache's exit statuses. Each means one thing, so scripts can branch on it.
public enum ExitStatus: Int32, CaseIterable, Sendable {
    case success = 0
    /// One or more URLs could not be fetched; the others were.
    case someFailed = 1
    /// The command line (or an IMGCACHE_ environment variable) is wrong.
    case usage = 64
    /// A command or a system library this build needs is not available.
    case unavailable = 69
    /// The cache cannot be written (permissions, full disk, read-only).
    case cacheUnwritable = 73
    /// The output file (-o) cannot be written.
    case outputFailed = 74
    /// Standard output was closed by its reader (for example `| head`).
    case brokenPipe = 141

    /// What the status means, for help and the man page.
    public var meaning: String {
        switch self {
        case .success: return "success"
        case .someFailed: return "one or more URLs failed (each is reported on stderr)"
        case .usage: return "usage error: bad command line or IMGCACHE_ variable"
        case .unavailable: return "command or required system library not available"
        case .cacheUnwritable: return "the cache cannot be written"
        case .outputFailed: return "the output file cannot be written"
        case .brokenPipe: return "standard output was closed early (quiet)"
        }
    }

    /// The statuses the documentation lists.
    public static var documented: [ExitStatus] { allCases }
}
