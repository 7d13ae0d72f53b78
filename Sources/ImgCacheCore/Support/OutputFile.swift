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
    /// Copies the file at `source` to `destination`.
    public static func write(contentsOf source: String, to destination: String) throws(SystemError) {
        var info = stat()
        let exists = SystemCall.lstat(destination, &info) == 0
        if !exists, Errno.current != .noSuchFile {
            throw SystemError("write", path: destination)
        }
        let type = info.st_mode & S_IFMT
        if exists, type == S_IFDIR { throw SystemError("write", path: destination, errno: .isDirectory) }
        if exists, type != S_IFREG {
            // A device, FIFO or link: written through, never replaced.
            try writeThrough(source, to: destination)
            return
        }
        let keptMode: mode_t? = exists ? info.st_mode & 0o7777 : nil
        do {
            try replace(destination, with: source, mode: keptMode)
        } catch where exists && (error.errno == .permissionDenied || error.errno == .readOnlyFileSystem) {
            // The folder cannot take a temporary file, but the file itself may be writable.
            try writeThrough(source, to: destination)
        }
    }

    /// Opens `destination` for writing as `fopen(path, "wb")` does (following
    /// a link, truncating a plain file) and copies `source` into it.
    private static func writeThrough(_ source: String, to destination: String) throws(SystemError) {
        var descriptor: Int32
        repeat {
            descriptor = SystemCall.open(destination, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o666)
        } while descriptor < 0 && Errno.current == .interrupted  // a FIFO's open waits for a reader
        guard descriptor >= 0 else { throw SystemError("write", path: destination) }
        defer { SystemCall.close(descriptor) }
        try FileSystem.copy(source, to: descriptor, destinationName: destination)
    }

    /// Replaces the plain file `destination` (or makes it) by a rename, with
    /// `mode` when it existed, else the permission bits the user's umask allows.
    private static func replace(_ destination: String, with source: String, mode: mode_t?) throws(SystemError) {
        let directory = FileSystem.parentDirectory(of: destination)
        var generator = SystemRandomNumberGenerator()
        let name = destination.split(separator: "/").last.map(String.init) ?? "output"
        let temporary = directory + "/." + name + ".imgcache-" + String(generator.next() as UInt64, radix: 36)
        let output = TemporaryFile.createLive(temporary)
        guard output >= 0 else { throw SystemError("write", path: destination) }
        do throws(SystemError) {
            defer { SystemCall.close(output) }
            // A new file takes the user's umask, not the cache's (IMGCACHE_UMASK).
            if SystemCall.fchmod(output, mode ?? (0o666 & ~CacheUmask.userMask)) != 0 { throw SystemError("write", path: destination) }
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
