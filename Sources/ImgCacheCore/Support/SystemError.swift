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

    public init(_ operation: String, path: String? = nil, errno: Errno = .current) {
        self.operation = operation
        self.path = path
        self.errno = errno
    }

    /// The C library's text for `errno` ("No space left on device").
    public var reason: String { errno.description }

    public var description: String {
        if let path { return "cannot \(operation) \(path): \(reason)" }
        return "cannot \(operation): \(reason)"
    }
}
