#if canImport(Glibc)
import Glibc
#endif

/// A finished download: the body, and the response.
///
/// A body is kept in memory as it arrives, so that it is checked and stored
/// without being read back; one larger than the transfer's memory limit goes
/// to a temporary file instead (`spilledPath`), removed when the body is let
/// go unless it was renamed into the cache first.
public final class DownloadedBody: Sendable {
    /// The body, in memory or in a file of its own.
    public enum Body: Sendable {
        case memory([UInt8])
        case file(String)
    }

    public let body: Body
    public let response: DownloadResponse

    init(body: Body, response: DownloadResponse) {
        self.body = body
        self.response = response
    }

    /// The body's temporary file, when it did not fit in memory.
    public var spilledPath: String? {
        if case .file(let path) = body { return path }
        return nil
    }

    /// The body's bytes (read from its file when it went to one).
    public func bytes() throws(SystemError) -> [UInt8] {
        switch body {
        case .memory(let bytes): return bytes
        case .file(let path): return try FileSystem.readFile(path, limit: Int(response.byteCount)) ?? []
        }
    }

    deinit {
        if let spilledPath { try? FileSystem.remove(spilledPath) }
    }
}
