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
        switch SystemCall.open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) {
        case .success(let descriptor):
            self.path = path
            self.descriptor = descriptor
        case .failure(let errno):
            throw DirectoryHandle.openFailure(path, errno)
        }
    }

    /// Opens the folder `name` inside this one, refusing a link in its place.
    public func child(_ name: String) throws(SystemError) -> DirectoryHandle {
        switch SystemCall.openat(descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) {
        case .success(let child): return DirectoryHandle(path: path + "/" + name, descriptor: child)
        case .failure(let errno): throw DirectoryHandle.openFailure(path + "/" + name, errno)
        }
    }

    /// The error for a failed open: ELOOP when a link stands in the folder's place
    /// (O_DIRECTORY reports it as ENOTDIR), else what open said.
    private static func openFailure(_ path: String, _ errno: Errno) -> SystemError {
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
        let copy = try SystemCall.dup(descriptor).get("list", path: path)
        let stream: OpaquePointer
        switch SystemCall.openDirectoryStream(copy) {
        case .success(let opened): stream = opened
        case .failure(let errno):
            SystemCall.close(copy)
            throw SystemError("list", path: path, errno: errno)
        }
        defer { closedir(stream) }
        rewinddir(stream)
        var items: [Item] = []
        while true {
            guard let entry = try SystemCall.readDirectory(stream).get("list", path: path) else { return items }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name == "." || name == ".." { continue }
            items.append(Item(name: name, type: entry.pointee.d_type))
        }
    }

    /// `lstat` of `name` inside this directory; nil when it is gone.
    public func status(_ name: String) throws(SystemError) -> FileStatus? {
        switch SystemCall.fstatat(descriptor, name, AT_SYMLINK_NOFOLLOW) {
        case .success(let info): return FileStatus(info)
        case .failure(.noSuchFile): return nil
        case .failure(let errno): throw SystemError("examine", path: path + "/" + name, errno: errno)
        }
    }

    /// Removes the file or link `name` (never what a link points to). Returns
    /// false when it was already gone.
    @discardableResult
    public func remove(_ name: String) throws(SystemError) -> Bool {
        switch SystemCall.unlinkat(descriptor, name, 0) {
        case .success: return true
        case .failure(.noSuchFile): return false
        case .failure(let errno): throw SystemError(DirectoryHandle.removing, path: path + "/" + name, errno: errno)
        }
    }

    /// The operations of `remove` and `truncate` in their errors.
    private static let removing = "remove", emptying = "empty"

    /// Whether `error` came from changing the folder (`remove`, `truncate`), not from reading it.
    public static func isWriteFailure(_ error: SystemError) -> Bool {
        error.operation == removing || error.operation == emptying
    }

    /// Empties the regular file `name` in place (its inode kept, so that a
    /// descriptor another process holds open for appending stays the file's).
    /// False when it was gone or is not a regular file (left alone).
    @discardableResult
    public func truncate(_ name: String) throws(SystemError) -> Bool {
        // O_NONBLOCK: a FIFO planted in its place is not waited on; it is refused below.
        let descriptor: Int32
        switch SystemCall.openat(self.descriptor, name, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) {
        case .success(let opened): descriptor = opened
        case .failure(.noSuchFile): return false
        case .failure(let errno): throw SystemError(DirectoryHandle.emptying, path: path + "/" + name, errno: errno)
        }
        defer { SystemCall.close(descriptor) }
        guard case .success(let info) = SystemCall.fstat(descriptor), FileStatus(info).isRegularFile else { return false }
        if case .failure(let errno) = SystemCall.ftruncate(descriptor, 0) {
            throw SystemError(DirectoryHandle.emptying, path: path + "/" + name, errno: errno)
        }
        return true
    }

    /// Renames `name` to `newName`, both inside this directory. Returns false when `name` was gone.
    @discardableResult
    public func rename(_ name: String, to newName: String) throws(SystemError) -> Bool {
        switch SystemCall.renameat(descriptor, name, newName) {
        case .success: return true
        case .failure(.noSuchFile): return false
        case .failure(let errno): throw SystemError("rename", path: path + "/" + name, errno: errno)
        }
    }
}
