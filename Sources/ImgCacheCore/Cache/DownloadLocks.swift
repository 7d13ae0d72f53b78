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
/// holder exits, SIGKILL included. Used by one thread (the manager's), but for
/// the `Heartbeat`s it hands to the download thread.
///
/// A process waiting for another's download says so with a shared lock on the
/// key's waiter byte (past the keys' bytes); the holder, while its transfer
/// receives bytes and someone waits, touches the key's heartbeat file in the
/// shard at most once a second; the waiter goes on waiting while the beats
/// come, and downloads the URL itself only when they stop for its timeout.
final class DownloadLocks {
    private let descriptor: Int32
    /// Keys' bytes start here, far past the shard bytes; waiters' bytes after them.
    private static let firstByte = 1 << 32
    private static let bytes = 1 << 40
    private static let firstWaiterByte = firstByte + bytes
    /// A waiter that gave up on a stalled holder downloads under the key's takeover byte: the
    /// others wait for it as for the holder, so that one process downloads, not every waiter.
    private static let firstTakeoverByte = firstWaiterByte + bytes

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

    private static func waiterByte(_ fingerprint: KeyFingerprint) -> Int {
        firstWaiterByte + Int(fingerprint.high % UInt64(bytes))
    }

    /// Takes over `fingerprint`'s download from a stalled holder, unless another waiter did first.
    func tryTakeOver(_ fingerprint: KeyFingerprint) -> Bool {
        let byte = DownloadLocks.firstTakeoverByte + Int(fingerprint.high % UInt64(DownloadLocks.bytes))
        switch SystemCall.lockByte(descriptor, byte, exclusive: true, wait: false) {
        case .success: return true
        case .failure(let errno): return errno != .wouldBlock && errno.rawValue != EACCES
        }
    }

    func endTakeOver(_ fingerprint: KeyFingerprint) {
        SystemCall.unlockByte(descriptor, DownloadLocks.firstTakeoverByte + Int(fingerprint.high % UInt64(DownloadLocks.bytes)))
    }

    /// Says that this process waits for `fingerprint`'s download by another (a shared lock many waiters hold).
    func startWaiting(_ fingerprint: KeyFingerprint) {
        _ = SystemCall.lockByte(descriptor, DownloadLocks.waiterByte(fingerprint), exclusive: false, wait: false)
    }

    func stopWaiting(_ fingerprint: KeyFingerprint) {
        SystemCall.unlockByte(descriptor, DownloadLocks.waiterByte(fingerprint))
    }

    /// The file this process touches while its download of `key` progresses, in the key's shard
    /// `folder`: `tmp.heartbeat.<md5>.<owner>.beat`, a temporary file's name with its owner, so that
    /// `clean` removes one a killed process left.
    static func heartbeatPath(of key: CacheKey, in folder: String) -> String {
        folder + "/" + heartbeatPrefix(of: key) + TemporaryFile.owner + ".beat"
    }

    private static func heartbeatPrefix(of key: CacheKey) -> String { TemporaryFile.prefix + "heartbeat." + key.digest + "." }

    /// When the holder of `key`'s lock last showed progress (seconds since the epoch), nil when it has not.
    static func lastHeartbeat(of key: CacheKey, in folder: String) -> Double? {
        let prefix = heartbeatPrefix(of: key)
        guard let names = try? DirectoryHandle(folder).list().map(\.name).filter({ $0.hasPrefix(prefix) }) else { return nil }
        return names.compactMap { name -> Double? in
            guard case .success(let info) = SystemCall.stat(following: folder + "/" + name) else { return nil }
            return Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
        }.max()
    }

    /// The heartbeat of one download this process holds the lock of, beaten from the download thread.
    func heartbeat(for fingerprint: KeyFingerprint, key: CacheKey, folder: String) -> Heartbeat {
        Heartbeat(descriptor: descriptor, waiterByte: DownloadLocks.waiterByte(fingerprint),
                  path: DownloadLocks.heartbeatPath(of: key, in: folder))
    }

    /// Touches the heartbeat file when another process waits, at most twice a second (whether one
    /// waits is asked at most four times a second: one fcntl).
    ///
    /// `@unchecked Sendable`: made on the manager thread, then beaten only on the download thread
    /// (libcurl's write callback) and ended on the manager thread after the transfer's answer came,
    /// when the download thread no longer beats it; `descriptor` is the locks' own, open for the
    /// fetcher's life, which outlasts its downloads.
    final class Heartbeat: @unchecked Sendable {
        private let descriptor: Int32
        private let waiterByte: Int
        let path: String
        private var lastBeat = 0.0, lastLook = 0.0
        private(set) var beaten = false

        init(descriptor: Int32, waiterByte: Int, path: String) {
            self.descriptor = descriptor
            self.waiterByte = waiterByte
            self.path = path
        }

        /// Bytes arrived: if someone waits and half a second has passed, the file's time is now.
        func beat() {
            let now = WallClock.monotonic()
            guard now - lastBeat >= 0.5, now - lastLook >= 0.25 else { return }
            lastLook = now
            guard ic_range_locked_by_others(descriptor, waiterByte, 1) == 1 else { return }
            lastBeat = now
            guard case .success(let file) = SystemCall.open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o644) else { return }
            futimens(file, nil)
            SystemCall.close(file)
            beaten = true
        }

        /// The download is over: its file goes, if it was made.
        func end() {
            if beaten { _ = SystemCall.unlink(path) }
        }
    }
}
