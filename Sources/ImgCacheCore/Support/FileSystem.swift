#if canImport(Glibc)
import Glibc
#endif

/// What `stat` says about a file, in the units the cache uses.
public struct FileStatus: Equatable, Sendable {
    public let inode: UInt64
    public let size: Int64
    /// Bytes the file occupies on disk (512-byte blocks times 512).
    public let allocatedSize: Int64
    /// Modification time in seconds since the epoch; the cache uses it as last access.
    public let modified: Double
    public let isRegularFile: Bool
    public let isDirectory: Bool
    public let isSymbolicLink: Bool
}

/// `UTIME_OMIT` from <sys/stat.h>, a macro Swift does not import.
private let utimeOmit = (1 << 30) - 2

/// Thin wrappers over the POSIX calls the cache makes. Every one goes through
/// here, so a failure always becomes a `SystemError` naming the path.
public enum FileSystem {
    /// `lstat`: never follows a symbolic link. Nil when the path does not exist.
    public static func status(_ path: String) throws(SystemError) -> FileStatus? {
        switch SystemCall.lstat(path) {
        case .success(let info): return FileStatus(info)
        case .failure(.noSuchFile), .failure(.notDirectory): return nil
        case .failure(let errno): throw SystemError("examine", path: path, errno: errno)
        }
    }

    /// `stat`, following a symbolic link: what a path a user gave leads to.
    public static func statusFollowingLinks(_ path: String) -> Result<FileStatus, Errno> {
        SystemCall.stat(following: path).map(FileStatus.init)
    }

    /// What `access` says of `path` for `mode` (R_OK, W_OK, X_OK, F_OK): nil when allowed.
    public static func accessDenial(_ path: String, _ mode: Int32) -> Errno? {
        if case .failure(let errno) = SystemCall.access(path, mode) { return errno }
        return nil
    }

    /// `fstat` on an open descriptor.
    public static func status(descriptor: Int32, path: String) throws(SystemError) -> FileStatus {
        FileStatus(try SystemCall.fstat(descriptor).get("examine", path: path))
    }

    /// Creates `path` and any missing parents with `mode` (as the umask
    /// allows: cache folders are shared as the user's umask says).
    /// `followingLinks`: a link to a folder counts as the folder (a user's
    /// output folder may be one); the cache's own folders are never links.
    public static func makeDirectories(_ path: String, mode: mode_t = 0o777, followingLinks: Bool = false) throws(SystemError) {
        switch SystemCall.mkdir(path, mode) {
        case .success:
            return
        case .failure(.fileExists):
            if followingLinks, case .success(let info) = SystemCall.stat(following: path), info.st_mode & S_IFMT == S_IFDIR { return }
            guard let existing = try status(path) else { return }
            // A link to nothing: said as such (its target is not made; the link may be a slip).
            if existing.isSymbolicLink, case .failure(.noSuchFile) = SystemCall.stat(following: path) {
                var target = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
                let length = readlink(path, &target, target.count - 1)
                let named = length > 0 ? String(decoding: target[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
                throw SystemError("create directory", path: path, errno: .noSuchFile,
                                  detail: "it is a symbolic link to \(named), which does not exist")
            }
            if !existing.isDirectory { throw SystemError("create directory", path: path, errno: .notDirectory) }
        case .failure(.noSuchFile):
            let parent = parentDirectory(of: path)
            guard parent != path, !parent.isEmpty else { throw SystemError("create directory", path: path, errno: .noSuchFile) }
            try makeDirectories(parent, mode: mode, followingLinks: followingLinks)
            switch SystemCall.mkdir(path, mode) {
            case .success, .failure(.fileExists): return
            case .failure(let errno): throw SystemError("create directory", path: path, errno: errno)
            }
        case .failure(let errno):
            throw SystemError("create directory", path: path, errno: errno)
        }
    }

    /// Reads a whole file of at most `limit` bytes. Nil when it does not exist.
    /// Only a regular file is read (a FIFO or device planted in its place is
    /// refused, never waited on) unless `allowingSpecialFiles` (a file a user
    /// named, which may be a pipe).
    public static func readFile(_ path: String, limit: Int, allowingSpecialFiles: Bool = false) throws(SystemError) -> [UInt8]? {
        let descriptor: Int32
        switch SystemCall.open(path, O_RDONLY | O_CLOEXEC | (allowingSpecialFiles ? 0 : O_NOFOLLOW | O_NONBLOCK)) {
        case .success(let opened): descriptor = opened
        case .failure(.noSuchFile), .failure(.notDirectory): return nil
        case .failure(let errno): throw SystemError("read", path: path, errno: errno)
        }
        defer { SystemCall.close(descriptor) }
        let status = try SystemCall.fstat(descriptor).get("read", path: path)
        if !allowingSpecialFiles, status.st_mode & S_IFMT != S_IFREG { throw notARegularFile(path, status) }
        // Sized from the file, not the limit: a generous limit must not cost its size in memory.
        let size = Int(status.st_size)
        let expected = size > 0 ? min(limit, size) : limit
        let capacity = min(limit, expected + 1)  // one more byte notices a file that grew
        var bytes = [UInt8](repeating: 0, count: capacity)
        var filled = 0
        while filled < capacity {
            let count = try bytes.withUnsafeMutableBytes { buffer in
                SystemCall.read(descriptor, buffer.baseAddress! + filled, capacity - filled)
            }.get("read", path: path)
            if count == 0 { break }
            filled += count
        }
        bytes.removeSubrange(filled...)
        return bytes
    }

    /// The start of a file up to its first line break (or `limit` bytes): a pipe or
    /// FIFO too, waiting at most `timeout` seconds for what it has to say.
    public static func readFirstLine(_ path: String, limit: Int, timeout: Double) throws(SystemError) -> [UInt8] {
        let descriptor = try SystemCall.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK).get("read", path: path)
        defer { SystemCall.close(descriptor) }
        let deadline = WallClock.monotonic() + timeout
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < limit, !bytes.contains(0x0A) {
            let left = deadline - WallClock.monotonic()
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = Glibc.poll(&poller, 1, Int32(max(0, min(left, 3600)) * 1000))
            if ready < 0, errno == EINTR { continue }
            if ready == 0 {
                throw SystemError("read", path: path, errno: .wouldBlock,
                                  detail: "nothing to read within \(DownloadError.formatSeconds(timeout))")
            }
            let count = chunk.withUnsafeMutableBytes { SystemCall.read(descriptor, $0.baseAddress, min($0.count, limit - bytes.count)) }
            switch count {
            case .success(0): return bytes
            case .success(let read): bytes += chunk[0..<read]
            case .failure(.wouldBlock), .failure(.interrupted): continue
            case .failure(let errno): throw SystemError("read", path: path, errno: errno)
            }
        }
        return bytes
    }

    /// Reads up to `count` bytes from the start of a file.
    public static func readPrefix(_ path: String, count: Int) throws(SystemError) -> [UInt8] {
        // One read, no fstat: a hit reads 64 bytes. Never waits: a FIFO in a file's place reads as empty.
        let descriptor = try SystemCall.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK).get("read", path: path)
        defer { SystemCall.close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: count)
        let read = try bytes.withUnsafeMutableBytes { SystemCall.read(descriptor, $0.baseAddress, count) }.get("read", path: path)
        bytes.removeSubrange(read...)
        return bytes
    }

    /// Reads up to `count` bytes from the start of the file open as `descriptor`, in one read.
    public static func readPrefix(descriptor: Int32, path: String, count: Int) throws(SystemError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let read = try bytes.withUnsafeMutableBytes { SystemCall.read(descriptor, $0.baseAddress, count) }.get("read", path: path)
        bytes.removeSubrange(read...)
        return bytes
    }

    /// Reads `count` bytes at `offset` of the file open as `descriptor` (fewer at its end).
    static func read(_ descriptor: Int32, count: Int, at offset: Int, path: String) throws(SystemError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let read = try bytes.withUnsafeMutableBytes {
                SystemCall.pread(descriptor, $0.baseAddress! + filled, count - filled, off_t(offset + filled))
            }.get("read", path: path)
            if read == 0 { break }
            filled += read
        }
        bytes.removeSubrange(filled...)
        return bytes
    }

    /// The error for a FIFO, device or socket where a file of the cache should be.
    static func notARegularFile(_ path: String, _ status: stat) -> SystemError {
        let kind: String
        switch status.st_mode & S_IFMT {
        case S_IFIFO: kind = "a FIFO"
        case S_IFCHR, S_IFBLK: kind = "a device"
        case S_IFSOCK: kind = "a socket"
        case S_IFDIR: kind = "a folder"
        default: kind = "not a regular file"
        }
        return SystemError("read", path: path, errno: Errno(EINVAL), detail: "it is \(kind), not a regular file; left as it is")
    }

    /// Opens `path` to append to it, creating it when `creating`: only a regular
    /// file (a FIFO planted in its place fails at once, never waits for a reader).
    static func openForAppending(_ path: String, creating: Bool) -> Result<Int32, Errno> {
        openRegular(path, O_WRONLY | O_APPEND | (creating ? O_CREAT : 0))
    }

    /// Opens `path` with `flags` (and O_CREAT's mode 0666), never following a link: only a
    /// regular file. Anything else planted there (a FIFO, a device) fails with EINVAL at once,
    /// never waits for a peer. The descriptor stays non-blocking, which a regular file ignores.
    static func openRegular(_ path: String, _ flags: Int32) -> Result<Int32, Errno> {
        let opened = SystemCall.open(path, flags | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o666)
        guard case .success(let descriptor) = opened else { return opened }
        guard case .success(let status) = SystemCall.fstat(descriptor), status.st_mode & S_IFMT == S_IFREG else {
            SystemCall.close(descriptor)
            return .failure(Errno(EINVAL))
        }
        return opened
    }

    /// Writes all of `bytes` to `descriptor`, retrying short writes and EINTR.
    public static func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws(SystemError) {
        var offset = 0
        while offset < bytes.count {
            offset += try SystemCall.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset).get("write", path: path)
        }
    }

    /// Writes all of `bytes` to `descriptor`.
    public static func writeAll(_ descriptor: Int32, _ bytes: [UInt8], path: String) throws(SystemError) {
        let failure: SystemError? = bytes.withUnsafeBytes { buffer in
            do throws(SystemError) { try writeAll(descriptor, buffer, path: path) } catch { return error }
            return nil
        }
        if let failure { throw failure }
    }

    /// Atomically replaces `destination` with `source` (same file system).
    /// A temporary file of this process renamed is no longer its to clean up.
    package static func rename(_ source: String, to destination: String) throws(SystemError) {
        try SystemCall.rename(source, destination).get("rename", path: destination)
        TemporaryFile.forget(source)
    }

    /// Removes a file; a file that is already gone is not an error.
    static func remove(_ path: String) throws(SystemError) {
        switch SystemCall.unlink(path) {
        case .success, .failure(.noSuchFile): break
        case .failure(let errno): throw SystemError("remove", path: path, errno: errno)
        }
        TemporaryFile.forget(path)
    }

    /// Sets a file's modification time without following a symbolic link.
    /// Explicit, so it works on `noatime` and `relatime` mounts alike.
    package static func setModificationTime(_ path: String, to seconds: Double) throws(SystemError) {
        let whole = seconds.rounded(.down)
        var times = (
            timespec(tv_sec: 0, tv_nsec: utimeOmit),
            timespec(tv_sec: Int(whole), tv_nsec: Int((seconds - whole) * 1e9))
        )
        try withUnsafePointer(to: &times) { pair in
            pair.withMemoryRebound(to: timespec.self, capacity: 2) {
                SystemCall.utimensat(path, $0, AT_SYMLINK_NOFOLLOW)
            }
        }.get("update the access time of", path: path)
    }

    /// The folder part of `path` ("/a/b" for "/a/b/c"; "/" for "/a").
    package static func parentDirectory(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "." }
        if slash == trimmed.startIndex { return "/" }
        return String(trimmed[..<slash])
    }

    /// The process's working directory ("/" if it cannot be read).
    public static func currentDirectory() -> String {
        (try? SystemCall.currentDirectory().get()) ?? "/"
    }
}

extension FileStatus {
    init(_ info: stat) {
        let type = info.st_mode & S_IFMT
        self.init(
            inode: UInt64(info.st_ino),
            size: Int64(info.st_size),
            allocatedSize: Int64(info.st_blocks) * 512,
            modified: Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9,
            isRegularFile: type == S_IFREG,
            isDirectory: type == S_IFDIR,
            isSymbolicLink: type == S_IFLNK
        )
    }
}

extension FileSystem {
    /// Copies the file at `source` to the open `descriptor`.
    public static func copy(_ source: String, to descriptor: Int32, destinationName: String) throws(SystemError) {
        let input = try SystemCall.open(source, O_RDONLY | O_CLOEXEC).get("read", path: source)
        defer { SystemCall.close(input) }
        var buffer = [UInt8](repeating: 0, count: 128 * 1024)
        while true {
            let count = try buffer.withUnsafeMutableBytes { SystemCall.read(input, $0.baseAddress!, $0.count) }.get("read", path: source)
            if count == 0 { return }
            let failure: SystemError? = buffer.withUnsafeBytes { bytes in
                do throws(SystemError) {
                    try writeAll(descriptor, UnsafeRawBufferPointer(rebasing: bytes[0..<count]), path: destinationName)
                } catch { return error }
                return nil
            }
            if let failure { throw failure }
        }
    }
}
