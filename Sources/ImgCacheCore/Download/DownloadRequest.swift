
/// What to download and how: SDWebImageDownloader's per-request settings.
public struct DownloadRequest: Equatable, Sendable {
    public var url: RemoteURL
    /// Folder in which the body file is created (the cache's temporary folder,
    /// so that storing the finished body is a rename).
    public var bodyDirectory: String
    /// Extra headers from `-H`; they replace the defaults of the same name.
    public var headers: [HTTPHeader] = []
    /// Basic-auth credentials (`-u user:password`).
    public var credentials: Credentials?
    /// Seconds allowed for connecting, and for any stretch without a byte received.
    public var timeout: Double = DownloadRequest.defaultTimeout
    /// Seconds allowed for connecting, when not `timeout`.
    public var connectTimeout: Double?
    /// Seconds allowed for the whole transfer (`--max-time`); nil: no bound but the idle timeout.
    public var maximumTime: Double?
    public var maximumRedirects: Int = DownloadRequest.defaultMaximumRedirects
    /// Abort once the body grows past this many bytes.
    public var maximumBytes: Int64?
    /// Validators of a cached copy: the request becomes conditional and a 304 is a success.
    public var validators: Validators?
    /// How many times a transient failure is tried again.
    public var retries: Int = 0
    /// What the body's first bytes must show (an image, within a pixel limit); nil: anything.
    public var bodyCheck: BodyCheck?
    /// GET for images; a remote store is also written (PUT) and probed (DELETE); an
    /// export's upload is checked (HEAD) and put in place (MOVE).
    public var method: Method = .get
    /// The body a PUT sends.
    public var uploadBody: [UInt8]?
    /// The file a PUT sends instead, read as it goes (an export's shard: too large to hold in memory).
    public var uploadFile: String?
    /// Sign the request with AWS Signature Version 4 (`aws:amz:REGION:s3`),
    /// `credentials` being the access key and secret.
    public var awsSigV4: String?

    /// An HTTP method imgcache sends.
    public enum Method: String, Equatable, Sendable {
        case get = "GET", put = "PUT", delete = "DELETE", head = "HEAD"
        /// WebDAV's rename, to the URL in a `Destination` header.
        case move = "MOVE"
        /// WebDAV's "make a collection" (a folder), for stores that do not make them on PUT.
        case mkcol = "MKCOL"
    }

    public static let defaultTimeout = 15.0
    public static let defaultMaximumRedirects = 10
    /// The formats imgcache stores, by name, best first, before any other
    /// image: a server that picks a format by `Accept` (AVIF for a browser
    /// that names it) sends one imgcache takes, the smallest it has.
    public static let defaultAccept = CodecRegistry.negotiatedFormats.map(\.mediaType).joined(separator: ",") + ",image/*;q=0.8,*/*;q=0.5"
    public static var defaultUserAgent: String { "imgcache/\(ImgCache.version)" }

    public init(url: RemoteURL, bodyDirectory: String) {
        self.url = url
        self.bodyDirectory = bodyDirectory
    }

    /// The header lines sent: the defaults, overridden or removed by `-H`, then
    /// the conditional headers.
    var headerLines: [String] {
        var lines: [String] = []
        for (name, value) in [("Accept", DownloadRequest.defaultAccept), ("User-Agent", DownloadRequest.defaultUserAgent)]
        where !headers.contains(where: { $0.name.lowercased() == name.lowercased() }) {
            lines.append(name + ": " + value)
        }
        lines += headers.map(\.line)
        if let etag = validators?.etag { lines.append("If-None-Match: " + etag) }
        if let lastModified = validators?.lastModified { lines.append("If-Modified-Since: " + lastModified) }
        return lines
    }

}

/// A user name and password for HTTP authentication. Its description never
/// shows the password, so it cannot leak through a log line by accident.
public struct Credentials: Equatable, Hashable, Sendable, CustomStringConvertible {
    public let user: String
    public let password: String

    public init(user: String, password: String) {
        self.user = user
        self.password = password
    }

    /// Splits `user:password` at the first colon (a password may contain colons).
    public init?(parsing text: String) {
        guard let colon = text.firstIndex(of: ":"), colon != text.startIndex else { return nil }
        user = String(text[..<colon])
        password = String(text[text.index(after: colon)...])
    }

    public var description: String { "\(user):***" }
}

/// A cached copy's validators, for a conditional request (RefreshCached).
public struct Validators: Equatable, Hashable, Sendable {
    public let etag: String?
    public let lastModified: String?

    /// Nil when the copy has neither, since then nothing can be revalidated.
    public init?(etag: String?, lastModified: String?) {
        guard etag != nil || lastModified != nil else { return nil }
        self.etag = etag
        self.lastModified = lastModified
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
    /// The length the final response announced (Content-Length): a HEAD's answer for the object's size.
    public internal(set) var announcedLength: Int64?
    /// Attempts made, 1 when the first one succeeded.
    public internal(set) var attempts = 1
    /// Seconds from the first attempt's start to the end of the last.
    public internal(set) var elapsed = 0.0
    /// What the response says of how long it stays fresh.
    public internal(set) var freshness = HTTPFreshness()
    /// The response's X-Robots-Tag values, joined.
    public internal(set) var robotsTag: String?

    /// Whether the server asked that the image not be used to train AI (`noai`,
    /// `noimageai` in X-Robots-Tag, for any crawler).
    public var optsOutOfAI: Bool {
        guard let robotsTag else { return false }
        return robotsTag.lowercased().split(whereSeparator: { ",: ".contains($0) }).contains { $0 == "noai" || $0 == "noimageai" }
    }

    /// A 304 to a conditional request: the cached copy is still good.
    public var notModified: Bool { statusCode == 304 }
}

/// Which queued downloads start first (SDWebImageDownloaderExecutionOrder).
public enum DownloadOrder: String, CaseIterable, Equatable, Sendable {
    /// Oldest request first.
    case fifo
    /// Newest request first: the last thing asked for is usually the one waited on.
    case lifo
}

/// How urgent a request is; higher ones start before lower ones whatever the order.
public enum DownloadPriority: Int, CaseIterable, Comparable, Sendable {
    case low = 0, normal = 1, high = 2

    public var name: String {
        switch self {
        case .low: return "low"
        case .normal: return "normal"
        case .high: return "high"
        }
    }

    public init?(name: String) {
        guard let match = DownloadPriority.allCases.first(where: { $0.name == name }) else { return nil }
        self = match
    }

    public static func < (a: DownloadPriority, b: DownloadPriority) -> Bool { a.rawValue < b.rawValue }
}
