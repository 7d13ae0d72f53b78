#if canImport(Glibc)
import Glibc
#endif

/// Which remote stores failed lately, shared by the processes of one cache
/// root: a store that failed is marked down for a minute, so that the next
/// runs skip it instead of each paying its timeout. A marker is a file
/// `<root>/.remote-down/<md5 of the store>`; its modification time is when.
public struct RemoteHealth: Sendable {
    public let directory: String
    /// How long a failed store is skipped.
    public static let downFor = 60.0

    public init(cacheRoot: String) {
        directory = cacheRoot + "/.remote-down"
    }

    private func path(_ spec: RemoteSpec) -> String { directory + "/" + MD5.hex(spec.identity) }

    /// When `spec` was marked down, if that was less than a minute ago.
    public func downSince(_ spec: RemoteSpec, now: Double) -> Double? {
        guard let status = try? FileSystem.status(path(spec)), status.isRegularFile,
              now - status.modified < RemoteHealth.downFor else { return nil }
        return status.modified
    }

    /// Marks `spec` down from `now` (best effort).
    public func markDown(_ spec: RemoteSpec, now: Double) {
        try? FileSystem.makeDirectories(directory)
        let marker = path(spec)
        if case .success(let descriptor) = SystemCall.open(marker, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o666) {
            SystemCall.close(descriptor)
        }
        try? FileSystem.setModificationTime(marker, to: now)
    }

    /// Forgets that `spec` was down (it answered again).
    public func markUp(_ spec: RemoteSpec) {
        try? FileSystem.remove(path(spec))
    }
}
