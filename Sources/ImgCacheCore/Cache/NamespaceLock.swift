#if canImport(Glibc)
import Glibc
#endif
import CImgCacheShims

/// How processes sharing a namespace stay out of each other's way: byte `i` of
/// `<namespace>/lock` guards shard `i`, and byte 256 marks a running clean.
///
/// Stores hold their shard's byte shared, for microseconds; `clean` and `clear`
/// hold it exclusive only while they remove that shard's victims, each renamed
/// aside and then checked unchanged. So a store never lands between a
/// cleaner's check and its removal. Lookups take no lock: a hit touches its
/// file by name last, which either shows in the cleaner's check or finds the
/// name gone (a miss), so a hit is never removed between being found and
/// being touched.
/// The locks are open-file-description locks: released by the kernel when the
/// holder dies, and exclusive between threads as between processes.
public struct NamespaceLock: Sendable {
    /// The lock file's name inside the namespace folder.
    public static let fileName = "lock"
    /// The byte a running `clean` holds.
    static let cleanerByte = 256
    /// Appends to the statistics file hold it shared; zeroing and compacting, exclusive.
    static let statisticsByte = 257
    /// Changing the remembered settings holds it exclusive (read, change, save).
    static let settingsByte = 258

    public let path: String

    public init(namespaceDirectory: String) {
        path = namespaceDirectory + "/" + NamespaceLock.fileName
    }

    public enum Mode: Sendable { case shared, exclusive }

    /// Creates the lock file if it is missing.
    func create() throws(SystemError) {
        SystemCall.close(try NamespaceLock.opened(path, O_RDWR | O_CREAT, "create"))
    }

    /// The lock file opened with `flags`; a FIFO or device in its place is refused, never used.
    private static func opened(_ path: String, _ flags: Int32, _ operation: String) throws(SystemError) -> Int32 {
        switch FileSystem.openRegular(path, flags) {
        case .success(let descriptor): return descriptor
        case .failure(let errno) where errno == Errno(EINVAL):
            throw SystemError(operation, path: path, errno: errno, detail: "it is not a regular file; left as it is")
        case .failure(.tooManySymbolicLinks):
            throw SystemError(operation, path: path, errno: .tooManySymbolicLinks,
                              detail: "it is a symbolic link; imgcache does not follow links inside the cache")
        case .failure(let errno): throw SystemError(operation, path: path, errno: errno)
        }
    }

    /// Runs `body` holding shard `shard`'s byte in `mode`. Without a lock file
    /// (nothing was ever stored) or one that cannot be opened (a read-only
    /// cache), `body` runs unlocked: nobody can be removing entries there.
    func withShard<Result, Failure: Error>(
        _ shard: Int, _ mode: Mode, using handle: Handle? = nil, _ body: () throws(Failure) -> Result
    ) throws(Failure) -> Result {
        if let handle, mode == .shared, let descriptor = handle.descriptor(opening: path) {
            let locked = (try? SystemCall.lockByte(descriptor, shard, exclusive: false, wait: true).get()) != nil
            defer { if locked { SystemCall.unlockByte(descriptor, shard) } }
            return try body()
        }
        guard let descriptor = NamespaceLock.open(path, readOnlyAllowed: mode == .shared) else { return try body() }
        defer { SystemCall.close(descriptor) }  // closing releases the lock
        let locked = (try? SystemCall.lockByte(descriptor, shard, exclusive: mode == .exclusive, wait: true).get()) != nil
        defer { if locked { SystemCall.unlockByte(descriptor, shard) } }
        return try body()
    }

    /// The lock file kept open for many shared locks by one thread, saving an
    /// open and a close per lookup. One per thread: byte locks belong to the
    /// open file, so two threads sharing one would release each other's.
    public final class Handle {
        private var openDescriptor: Int32 = -1

        public init() {}

        deinit { if openDescriptor >= 0 { SystemCall.close(openDescriptor) } }

        /// The open lock file; opened on first use (and tried again while it does not exist).
        func descriptor(opening path: String) -> Int32? {
            if openDescriptor < 0 { openDescriptor = NamespaceLock.open(path, readOnlyAllowed: true) ?? -1 }
            return openDescriptor >= 0 ? openDescriptor : nil
        }
    }

    /// Claims the namespace's one running clean. Nil when another process has it.
    func tryClaimCleaner() throws(SystemError) -> CleanerClaim? {
        try create()
        let descriptor = try NamespaceLock.opened(path, O_RDWR, "open")
        switch SystemCall.lockByte(descriptor, NamespaceLock.cleanerByte, exclusive: true, wait: false) {
        case .success:
            return CleanerClaim(descriptor: descriptor)
        case .failure(let errno):
            SystemCall.close(descriptor)
            if errno == .wouldBlock || errno == .permissionDenied { return nil }
            throw SystemError("lock", path: path, errno: errno)
        }
    }

    /// The lock file opened for writing, or for reading only where allowed
    /// (a cache the user may read but not write); nil when it cannot be opened.
    private static func open(_ path: String, readOnlyAllowed: Bool) -> Int32? {
        switch FileSystem.openRegular(path, O_RDWR) {
        case .success(let descriptor): return descriptor
        case .failure(let errno) where errno == Errno(EINVAL): return nil  // not a regular file
        case .failure: break
        }
        guard readOnlyAllowed else { return nil }
        return try? FileSystem.openRegular(path, O_RDONLY).get()
    }
}

/// Held while a clean runs; the claim ends when this is released (or the process dies).
final class CleanerClaim {
    private let descriptor: Int32
    init(descriptor: Int32) { self.descriptor = descriptor }
    deinit { SystemCall.close(descriptor) }
}
