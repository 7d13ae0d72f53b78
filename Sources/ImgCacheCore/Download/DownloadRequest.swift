/// What to download and how: SDWebImageDownloader's per-request settings.
public struct DownloadRequest: Equatable, Sendable {
    public var url: RemoteURL
    /// Extra header lines ("Name: value"), sent after the defaults and overriding them.
    public var headers: [String] = []
    /// Seconds allowed for connecting, and for any stretch without a byte received.
    public var timeout: Double = DownloadRequest.defaultTimeout
    public var maximumRedirects: Int = DownloadRequest.defaultMaximumRedirects
    /// Abort once the body grows past this many bytes.
    public var maximumBytes: Int64?

    public static let defaultTimeout = 15.0
    public static let defaultMaximumRedirects = 10
    public static let defaultAccept = "image/*,*/*;q=0.8"
    public static var defaultUserAgent: String { "imgcache/\(ImgCache.version)" }

    public init(url: RemoteURL) {
        self.url = url
    }
}

/// What the server answered, for a download that succeeded.
public struct DownloadResponse: Equatable, Sendable {
    public let statusCode: Int
    /// The URL after redirects.
    public let effectiveURL: String
    public let etag: String?
    public let lastModified: String?
    public let contentType: String?
    public let byteCount: Int64
}
