#if canImport(Glibc)
import Glibc
#endif
import CImgCacheShims

/// One download of a URL at a time across the processes sharing a namespace:
/// a process downloading a key holds an exclusive lock on one byte of the
/// namespace's lock file chosen by the key (past the bytes `NamespaceLock`
/// uses); another that misses the same key finds it held, waits, and looks
/// the cache up again once it is free. The locks are open-file-description
/// locks on a descriptor of their own: the kernel releases them when the
/// holder exits, SIGKILL included. Used by one thread (the manager's).
final class DownloadLocks {
    private let descriptor: Int32
    /// Keys' bytes start here, far past the shard bytes.
    private static let firstByte = 1 << 32
    private static let bytes = 1 << 40

    /// The namespace's lock file opened for writing; nil when it cannot be (a
    /// read-only cache), then nothing is locked.
    init?(namespace: NamespaceLock) {
        guard (try? namespace.create()) != nil,
              case .success(let descriptor) = FileSystem.openRegular(namespace.path, O_RDWR) else { return nil }
        self.descriptor = descriptor
    }

    deinit { SystemCall.close(descriptor) }

    private static func byte(_ fingerprint: KeyFingerprint) -> Int {
        firstByte + Int(fingerprint.high % UInt64(bytes))
    }

    /// Takes `fingerprint`'s lock if no other process holds it.
    func tryLock(_ fingerprint: KeyFingerprint) -> Bool {
        switch SystemCall.lockByte(descriptor, DownloadLocks.byte(fingerprint), exclusive: true, wait: false) {
        case .success: return true
        // Another error (no locks on this file system): as if free, the download goes on unguarded.
        case .failure(let errno): return errno != .wouldBlock && errno.rawValue != EACCES
        }
    }

    /// Whether another process is downloading into the namespace now (holds any key's lock):
    /// only then can an entry have been stored since this one looked it up. One call.
    func othersAreDownloading() -> Bool {
        ic_range_locked_by_others(descriptor, DownloadLocks.firstByte, DownloadLocks.bytes) != 0
    }

    func unlock(_ fingerprint: KeyFingerprint) {
        SystemCall.unlockByte(descriptor, DownloadLocks.byte(fingerprint))
    }
}
