#if canImport(Glibc)
import Glibc
#endif

/// A failed system call: the operation, the path it was about and the `errno` it set.
public struct SystemError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What was being done, in words ("create directory", "rename").
    public let operation: String
    /// The file the operation was about, if any.
    public let path: String?
    /// The C `errno` value.
    public let code: Int32

    public init(_ operation: String, path: String? = nil, code: Int32 = errno) {
        self.operation = operation
        self.path = path
        self.code = code
    }

    /// The C library's text for `code` ("No space left on device").
    public var reason: String { String(cString: strerror(code)) }

    public var description: String {
        if let path { return "cannot \(operation) \(path): \(reason)" }
        return "cannot \(operation): \(reason)"
    }
}
