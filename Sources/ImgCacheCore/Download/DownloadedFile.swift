#if canImport(Glibc)
import Glibc
#endif

/// A finished download: the body in a file of its own, and the response.
///
/// Every requester of a coalesced download gets the same instance. The file
/// is removed when the last of them lets go, unless one of them has renamed
/// it into the cache by then (the unlink then finds nothing).
public final class DownloadedFile: Sendable {
    /// The body file (empty for a 304).
    public let path: String
    public let response: DownloadResponse

    init(path: String, response: DownloadResponse) {
        self.path = path
        self.response = response
    }

    deinit {
        try? FileSystem.remove(path)
    }
}
