#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Files being written in the cache: `tmp.<tag>.<owner>.<random>`, where owner
/// is `<host>-<pid>` (host: a short hash of the host name and PID namespace).
/// The name alone tells `clean` whose file it is, so the leftovers of a killed
/// process are recognised at once, and a live writer's file is never taken.
public enum TemporaryFile {
    /// How every temporary name begins; no entry's name does (entries begin with hex digits).
    public static let prefix = "tmp."
    /// A temporary file untouched this long is abandoned whoever owns it: a live
    /// download writes at least once per idle timeout, and `--timeout` is at most a day.
    public static let abandonedAfter: Double = 2 * 86_400

    /// This process's `<host>-<pid>`, worked out once (imgcache never forks).
    static let owner = hostToken + "-" + String(getpid())

    /// Names are unique in this process by a counter, from a random start, so
    /// that making one costs no system call (the PID keeps processes apart).
    private static let nameCounter = Atomic<UInt64>(UInt64.random(in: 0..<(1 << 40)))

    /// Eight hex digits naming this host and PID namespace: PIDs are only
    /// comparable between processes that share both.
    static let hostToken: String = {
        var name = [CChar](repeating: 0, count: 256)
        gethostname(&name, name.count - 1)
        var namespace = [CChar](repeating: 0, count: 128)
        let length = readlink("/proc/self/ns/pid", &namespace, namespace.count - 1)
        let host = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let pidNamespace = length > 0 ? String(decoding: namespace[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
        return String(MD5.hex(host + "\n" + pidNamespace).prefix(8))
    }()

    /// Opens a new file `tmp.<tag>.<owner>.<random>` in `directory`, exclusively.
    static func create(in directory: String, tag: String) throws(SystemError) -> (descriptor: Int32, path: String) {
        for _ in 0..<16 {
            let suffix = String(nameCounter.add(1, ordering: .relaxed).newValue, radix: 36)
            let path = directory + "/" + prefix + tag + "." + owner + "." + suffix
            switch createLive(path) {
            case .success(let descriptor): return (descriptor, path)
            // A name left by a killed process with the same PID: take the next.
            case .failure(.fileExists): continue
            case .failure(let errno): throw SystemError("create a file in", path: directory, errno: errno)
            }
        }
        throw SystemError("create a file in", path: directory, errno: .fileExists)
    }

    /// `create(in:tag:)`, making `directory` (and its parents) first when it
    /// does not exist: a folder removed while a run goes on comes back, at the
    /// cost of a system call only then.
    static func create(inMaking directory: String, tag: String) throws(SystemError) -> (descriptor: Int32, path: String) {
        do {
            return try create(in: directory, tag: tag)
        } catch where error.errno == .noSuchFile {
            try FileSystem.makeDirectories(directory)
            return try create(in: directory, tag: tag)
        }
    }

    /// Replaces the file `name` in `directory` with `text` through a temporary
    /// file and a rename, so a reader sees the old file or the new one whole;
    /// `modified` sets the new file's time first.
    static func replace(_ name: String, in directory: String, with text: String, modified: Double? = nil) throws(SystemError) {
        let (descriptor, temporary) = try create(in: directory, tag: name)
        defer { try? FileSystem.remove(temporary) }
        do {
            defer { SystemCall.close(descriptor) }
            try FileSystem.writeAll(descriptor, Array(text.utf8), path: temporary)
        }
        if let modified { try FileSystem.setModificationTime(temporary, to: modified) }
        try FileSystem.rename(temporary, to: directory + "/" + name)
    }

    /// The temporary files this process made and has not yet renamed or
    /// removed, so that a forced exit can remove them first.
    private static let live = Mutex<Set<String>>([])

    /// Creates `path` exclusively (`open` with O_CREAT | O_EXCL) and keeps it
    /// among the live temporary files; its descriptor, or why it cannot be. The
    /// file is made inside the lock `exitRemovingLiveFiles` holds, so none can
    /// appear after that removal.
    static func createLive(_ path: String) -> Result<Int32, Errno> {
        live.withLock { paths in
            let opened = SystemCall.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o666)
            if case .success = opened { paths.insert(path) }
            return opened
        }
    }

    /// `path` was renamed or removed: it is no longer this process's to clean up.
    static func forget(_ path: String) {
        _ = live.withLock { $0.remove(path) }
    }

    /// Removes every live temporary file and ends the process with `status`
    /// at once (a second SIGINT or SIGTERM). The lock is never released:
    /// threads about to make a file wait until the process is gone.
    public static func exitRemovingLiveFiles(status: Int32) -> Never {
        live.withLock { paths -> Never in
            for path in paths { Glibc.unlink(path) }  // never a fault: this is the way out
            _exit(status)
        }
    }

    /// Whether `name` is a temporary file's name.
    public static func isTemporary(_ name: String) -> Bool {
        name.hasPrefix(prefix)
    }

    /// Whether the temporary file `name`, last modified at `modified`, is left
    /// over: its writer on this host is gone, or nobody touched it for two days.
    public static func isAbandoned(_ name: String, modified: Double, now: Double) -> Bool {
        if now - modified >= abandonedAfter { return true }
        let parts = name.split(separator: ".")
        guard parts.count >= 4 else { return false }
        let owner = parts[parts.count - 2].split(separator: "-")
        guard owner.count == 2, owner[0] == hostToken, let pid = Int32(owner[1]), pid > 0 else { return false }
        return SystemCall.processIsGone(pid)
    }
}
