#if canImport(Glibc)
import Glibc
#endif

/// Writes an image where a user pointed `-o` or `--output-dir`, as curl does:
/// through whatever is at the path. A device, a FIFO, a socket's peer or a
/// symbolic link is opened for writing and written (a link's target gets the
/// bytes, the link stays); nothing that is not a plain file is ever replaced.
/// A plain file, or a new one, is replaced atomically (a temporary file beside
/// it, then a rename), keeping an existing file's permission bits, so a reader
/// never sees half an image; where no file can be made beside it (a folder the
/// user cannot write), an existing file is written in place instead.
public enum OutputFile {
    /// Copies the file at `source` to `destination`. `isCancelled` is asked
    /// while a FIFO waits for its reader (a signal must not wait for one).
    public static func write(contentsOf source: String, to destination: String,
                             isCancelled: () -> Bool = { false }) throws(SystemError) {
        var info = stat()
        let exists: Bool
        switch SystemCall.lstat(destination) {
        case .success(let found): (info, exists) = (found, true)
        case .failure(.noSuchFile): exists = false
        case .failure(let errno): throw SystemError("write", path: destination, errno: errno)
        }
        let type = info.st_mode & S_IFMT
        if exists, type == S_IFDIR { throw SystemError("write", path: destination, errno: .isDirectory) }
        if exists, type != S_IFREG {
            // A device, FIFO or link: written through, never replaced.
            try writeThrough(source, to: destination, isCancelled: isCancelled)
            return
        }
        let kept: stat? = exists ? info : nil
        do {
            try replace(destination, with: source, keeping: kept)
        } catch where exists && (error.errno == .permissionDenied || error.errno == .readOnlyFileSystem) {
            // The folder cannot take a temporary file, but the file itself may be writable.
            try writeThrough(source, to: destination, isCancelled: isCancelled)
        }
    }

    /// Whether writing `destination` (through a link there) would write into an
    /// imgcache namespace: an entry's file, or the namespace's own. Those are
    /// written only by stores, with their metadata and under the shard's lock.
    public static func isInsideACache(_ destination: String) -> Bool {
        var target = destination
        if (try? FileSystem.status(destination))??.isSymbolicLink == true {
            guard let resolved = realpath(destination, nil) else { return false }
            defer { free(resolved) }
            target = String(cString: resolved)
        }
        // The nearest folder that exists (--output-dir makes the rest), then every folder above it.
        var folder = FileSystem.parentDirectory(of: target)
        var resolved = realpath(folder, nil)
        while resolved == nil, folder != "/", folder != "." {
            folder = FileSystem.parentDirectory(of: folder)
            resolved = realpath(folder, nil)
        }
        guard let resolved else { return false }
        defer { free(resolved) }
        var ancestor = String(cString: resolved)
        while true {
            if NamespaceMarker.isMarked(ancestor) { return true }
            guard ancestor != "/" else { return false }
            ancestor = FileSystem.parentDirectory(of: ancestor)
        }
    }

    /// The path of the regular file standard output writes to, if it is one (from /proc).
    public static func fileOfStandardOutput() -> String? {
        guard case .success(let info) = SystemCall.fstat(1), info.st_mode & S_IFMT == S_IFREG else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/fd/1", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        let path = String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return path.hasPrefix("/") ? path : nil
    }

    /// Whether `destination` is a regular file holding exactly the bytes of `source` (compared a
    /// block at a time, after their sizes).
    public static func holdsSameBytes(_ destination: String, as source: String) -> Bool {
        guard case .success(let target) = SystemCall.lstat(destination), target.st_mode & S_IFMT == S_IFREG,
              case .success(let original) = SystemCall.stat(following: source), target.st_size == original.st_size,
              case .success(let a) = SystemCall.open(destination, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK) else { return false }
        defer { SystemCall.close(a) }
        guard case .success(let b) = SystemCall.open(source, O_RDONLY | O_CLOEXEC | O_NONBLOCK) else { return false }
        defer { SystemCall.close(b) }
        var offset = 0
        let size = Int(target.st_size)
        while offset < size {
            let count = min(1 << 20, size - offset)
            guard let left = try? FileSystem.read(a, count: count, at: offset, path: destination),
                  let right = try? FileSystem.read(b, count: count, at: offset, path: source),
                  left.count == count, right.count == count,
                  // memcmp: Array's == compares element by element.
                  left.withUnsafeBytes({ l in right.withUnsafeBytes { r in memcmp(l.baseAddress!, r.baseAddress!, count) == 0 } })
            else { return false }
            offset += count
        }
        return true
    }

    /// Whether `path` is a symbolic link (not followed).
    public static func isLink(_ path: String) -> Bool {
        guard case .success(let found) = SystemCall.lstat(path) else { return false }
        return found.st_mode & S_IFMT == S_IFLNK
    }

    /// Removes `path` when it is a symbolic link (a copy goes in its place, not through it).
    public static func removeLink(_ path: String) throws(SystemError) {
        guard case .success(let found) = SystemCall.lstat(path), found.st_mode & S_IFMT == S_IFLNK else { return }
        try FileSystem.remove(path)
    }

    /// Whether `destination` is a regular file (not a link) of `size` bytes.
    public static func isFile(_ destination: String, ofSize size: Int64) -> Bool {
        guard case .success(let target) = SystemCall.lstat(destination) else { return false }
        return target.st_mode & S_IFMT == S_IFREG && Int64(target.st_size) == size
    }

    /// Whether `destination` is a regular file holding exactly `bytes` (a small source already read).
    public static func holds(_ destination: String, bytes: [UInt8]) -> Bool {
        guard case .success(let target) = SystemCall.lstat(destination), target.st_mode & S_IFMT == S_IFREG,
              Int(target.st_size) == bytes.count,
              let found = try? FileSystem.readFile(destination, limit: bytes.count + 1), found.count == bytes.count else { return false }
        return bytes.isEmpty || found.withUnsafeBytes { l in bytes.withUnsafeBytes { r in memcmp(l.baseAddress!, r.baseAddress!, bytes.count) == 0 } }
    }

    /// Whether `a` and `b` name one file (following links).
    public static func isSameFile(_ a: String, _ b: String) -> Bool {
        guard case .success(let first) = SystemCall.stat(following: a), case .success(let second) = SystemCall.stat(following: b) else { return false }
        return first.st_dev == second.st_dev && first.st_ino == second.st_ino
    }

    /// Writes `bytes` to `destination` as `write(contentsOf:to:)` writes a file.
    public static func write(bytes: [UInt8], to destination: String) throws(SystemError) {
        let (descriptor, path) = try TemporaryFile.create(in: EntryCommitter.memoryOnlyDirectory, tag: "output")
        defer {
            SystemCall.close(descriptor)
            try? FileSystem.remove(path)
        }
        try FileSystem.writeAll(descriptor, bytes, path: path)
        try write(contentsOf: path, to: destination)
    }

    /// Opens `destination` for writing as `fopen(path, "wb")` does (following
    /// a link, truncating a plain file) and copies `source` into it. A FIFO
    /// is opened without blocking, again and again until a reader comes or
    /// `isCancelled` says to stop: a blocking open could not be interrupted.
    private static func writeThrough(_ source: String, to destination: String, isCancelled: () -> Bool) throws(SystemError) {
        let isFIFO = (try? SystemCall.stat(following: destination).get()).map { $0.st_mode & S_IFMT == S_IFIFO } ?? false
        var descriptor: Int32
        while true {
            let opened = SystemCall.open(destination, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | (isFIFO ? O_NONBLOCK : 0), 0o666)
            guard case .failure(let failure) = opened else {
                descriptor = try opened.get("write", path: destination)
                break
            }
            // ENXIO: a FIFO without a reader yet.
            guard isFIFO, failure == Errno(ENXIO) else { throw SystemError("write", path: destination, errno: failure) }
            if isCancelled() { throw SystemError("write", path: destination, errno: .interrupted) }
            var pause = timespec(tv_sec: 0, tv_nsec: 20_000_000)
            nanosleep(&pause, nil)
        }
        defer { SystemCall.close(descriptor) }
        if isFIFO { _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK) }
        try FileSystem.copy(source, to: descriptor, destinationName: destination)
    }

    /// Replaces the plain file `destination` (or makes it) by a rename,
    /// keeping the permission bits and, where allowed, the owner of the file
    /// it replaces (`kept`); a new one takes the bits the user's umask allows.
    private static func replace(_ destination: String, with source: String, keeping kept: stat?) throws(SystemError) {
        let directory = FileSystem.parentDirectory(of: destination)
        var generator = SystemRandomNumberGenerator()
        let name = destination.split(separator: "/").last.map(String.init) ?? "output"
        let temporary = directory + "/." + name + ".imgcache-" + String(generator.next() as UInt64, radix: 36)
        let output = try TemporaryFile.createLive(temporary).get("write", path: destination)
        do throws(SystemError) {
            defer { SystemCall.close(output) }
            // As root, a file of another user stays theirs (best effort, as a group may not be ours to give).
            if let kept, kept.st_uid != geteuid() || kept.st_gid != getegid() { _ = fchown(output, kept.st_uid, kept.st_gid) }
            // A new file takes the user's umask, not the cache's (IMGCACHE_UMASK).
            let mode = kept.map { $0.st_mode & 0o7777 } ?? (0o666 & ~CacheUmask.userMask)
            try SystemCall.fchmod(output, mode).get("write", path: destination)
            try FileSystem.copy(source, to: output, destinationName: destination)
        } catch {
            try? FileSystem.remove(temporary)
            throw error
        }
        do {
            try FileSystem.rename(temporary, to: destination)
        } catch {
            try? FileSystem.remove(temporary)
            throw error
        }
    }
}
