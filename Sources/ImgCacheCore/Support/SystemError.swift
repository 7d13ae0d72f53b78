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

    /// The C library's text for `errno` ("No space left on device"), or imgcache's own reason.
    public var reason: String { detail ?? errno.description }

    public var description: String {
        if let path { return "cannot \(operation) \(path): \(reason)" }
        return "cannot \(operation): \(reason)"
    }
}
