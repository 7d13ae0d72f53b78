#if canImport(Glibc)
import Glibc
#endif

/// A failed system call: the operation, the path it was about and the `errno` it set.
public struct SystemError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What was being done, in words ("create directory", "rename").
    public let operation: String
    /// The file the operation was about, if any.
    public let path: String?
    /// What the system call said went wrong.
    public let errno: Errno
    /// Why, when imgcache refused rather than the system (then `errno` is the nearest value).
    public let detail: String?

    public init(_ operation: String, path: String? = nil, errno: Errno, detail: String? = nil) {
        self.operation = operation
        self.path = path
        self.errno = errno
        self.detail = detail
    }

    /// The C library's text for `errno` ("No space left on device"), or imgcache's own reason; for
    /// a limit of the process, which limit (`ulimit -n`, `ulimit -u`) and its value.
    public var reason: String {
        if let detail { return detail }
        if errno == .tooManyOpenFiles { return errno.description + " (the limit of open files, ulimit -n \(SystemError.limit(Int32(RLIMIT_NOFILE.rawValue))))" }
        if isThreadLimit { return errno.description + " (the limit of processes and threads, ulimit -u \(SystemError.limit(6)))" }
        return errno.description
    }

    /// Whether the system refused a resource of the process or the machine (descriptors, threads),
    /// not the file: the run says so and ends 71, whatever it was doing.
    public var exhaustsResources: Bool {
        errno == .tooManyOpenFiles || errno == .fileTableFull || isThreadLimit
    }

    private var isThreadLimit: Bool {
        (operation == "start a thread" || operation == "start a process") && (errno == .wouldBlock || errno == .outOfMemory)
    }

    /// The soft limit `resource` (6: RLIMIT_NPROC, which Glibc's module does not name).
    private static func limit(_ resource: Int32) -> String {
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0, limit.rlim_cur != rlim_t.max else { return "unlimited" }
        return "\(limit.rlim_cur)"
    }

    public var description: String {
        if let path { return "cannot \(operation) \(path): \(reason)" }
        return "cannot \(operation): \(reason)"
    }
}
