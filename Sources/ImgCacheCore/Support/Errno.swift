#if canImport(Glibc)
import Glibc
#endif

/// A C `errno` value as a type, so code compares `.noSpace` rather than a bare
/// `Int32` and cannot mix it up with another number.
public struct Errno: Error, Hashable, Sendable, CustomStringConvertible {
    /// The C value (`ENOSPC` is 28 on Linux).
    public let rawValue: Int32

    public init(_ rawValue: Int32) { self.rawValue = rawValue }

    /// The value the calling thread's last failed system call left.
    static var current: Errno {
        get { Errno(Glibc.errno) }
        set { Glibc.errno = newValue.rawValue }
    }

    /// The C library's text ("No space left on device").
    public var description: String { String(cString: strerror(rawValue)) }

    public static let noSuchFile = Errno(ENOENT)
    public static let fileExists = Errno(EEXIST)
    public static let notDirectory = Errno(ENOTDIR)
    public static let crossDevice = Errno(EXDEV)
    public static let isDirectory = Errno(EISDIR)
    public static let tooManySymbolicLinks = Errno(ELOOP)
    public static let permissionDenied = Errno(EACCES)
    public static let noSpace = Errno(ENOSPC)
    public static let ioError = Errno(EIO)
    public static let interrupted = Errno(EINTR)
    public static let wouldBlock = Errno(EAGAIN)
    public static let brokenPipe = Errno(EPIPE)
    public static let notSupported = Errno(ENOTSUP)
    public static let readOnlyFileSystem = Errno(EROFS)
    public static let tooManyOpenFiles = Errno(EMFILE)
    public static let fileTableFull = Errno(ENFILE)
    public static let outOfMemory = Errno(ENOMEM)
}
