#if canImport(Glibc)
import Glibc
#endif

/// An open directory, used for walking the cache without ever following a
/// symbolic link: it is opened with O_NOFOLLOW, and every name inside it is
/// examined and removed relative to it (`fstatat`, `unlinkat`), so a link
/// planted in the cache is seen as a link and never as what it points to.
public final class DirectoryHandle {
    public let path: String
    private let descriptor: Int32

    /// One name in a listing and what `readdir` says it is.
    public struct Item: Sendable {
        public let name: String
        /// DT_REG, DT_DIR, DT_LNK or DT_UNKNOWN (some file systems say nothing).
        public let type: UInt8
    }

    /// Opens `path` as a directory; throws ELOOP when it is a symbolic link and
    /// ENOTDIR when it is not a directory.
    public init(_ path: String) throws(SystemError) {
        let descriptor = SystemCall.open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { throw DirectoryHandle.openFailure(path) }
        self.path = path
        self.descriptor = descriptor
    }

    /// Opens the folder `name` inside this one, refusing a link in its place.
    public func child(_ name: String) throws(SystemError) -> DirectoryHandle {
        let child = SystemCall.openat(descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard child >= 0 else { throw DirectoryHandle.openFailure(path + "/" + name) }
        return DirectoryHandle(path: path + "/" + name, descriptor: child)
    }

    /// The error for a failed open: ELOOP when a link stands in the folder's place
    /// (O_DIRECTORY reports it as ENOTDIR), else what open said.
    private static func openFailure(_ path: String) -> SystemError {
        let errno = Errno.current
        if errno == .notDirectory, (try? FileSystem.status(path))??.isSymbolicLink == true {
            return SystemError("open", path: path, errno: .tooManySymbolicLinks)
        }
        return SystemError("open", path: path, errno: errno)
    }

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = descriptor
    }

    deinit { SystemCall.close(descriptor) }

    /// Every name in the directory except `.` and `..`.
    public func list() throws(SystemError) -> [Item] {
        // fdopendir takes over the descriptor it is given, so it gets a duplicate.
        let copy = SystemCall.dup(descriptor)
        guard copy >= 0, let stream = fdopendir(copy) else {
            if copy >= 0 { SystemCall.close(copy) }
            throw SystemError("list", path: path)
        }
        defer { closedir(stream) }
        rewinddir(stream)
        var items: [Item] = []
        while true {
            errno = 0
            guard let entry = readdir(stream) else {
                if errno != 0 { throw SystemError("list", path: path) }
                return items
            }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name == "." || name == ".." { continue }
            items.append(Item(name: name, type: entry.pointee.d_type))
        }
    }

    /// `lstat` of `name` inside this directory; nil when it is gone.
    public func status(_ name: String) throws(SystemError) -> FileStatus? {
        var info = stat()
        guard SystemCall.fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
            if errno == ENOENT { return nil }
            throw SystemError("examine", path: path + "/" + name)
        }
        return FileStatus(info)
    }

    /// Removes the file or link `name` (never what a link points to). Returns
    /// false when it was already gone.
    @discardableResult
    public func remove(_ name: String) throws(SystemError) -> Bool {
        if SystemCall.unlinkat(descriptor, name, 0) == 0 { return true }
        if errno == ENOENT { return false }
        throw SystemError("remove", path: path + "/" + name)
    }
}
