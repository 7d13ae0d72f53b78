/// Why `fetch` could not answer for one URL.
public enum FetchError: Error, Equatable, Sendable {
    /// The string is not a URL imgcache can fetch.
    case invalidURL(url: String, reason: String)
    /// The URL's scheme is not http or https.
    case unsupportedScheme(url: String, scheme: String)
    /// The download failed.
    case download(url: String, DownloadError)
    /// The server answered with something that is not an image.
    case notAnImage(url: String, contentType: String?)
    /// An image of a format imgcache does not store.
    case unsupportedFormat(url: String, ImageFormat)
    /// The image's header does not decode.
    case corruptImage(url: String, reason: String)
    /// The cache folder cannot be written.
    case cacheUnwritable(SystemError)
    /// A C library imgcache needs is not installed.
    case libraryMissing(String)

    /// One line for the user: the URL (credentials hidden) and the cause.
    public var message: String {
        switch self {
        case .invalidURL(let url, let reason): return "\(RemoteURL.redacted(url)): invalid URL: \(reason)"
        case .unsupportedScheme(let url, let scheme):
            return "\(RemoteURL.redacted(url)): unsupported scheme '\(scheme)' (only http and https)"
        case .download(let url, let error): return "\(RemoteURL.redacted(url)): \(error.reason)"
        case .notAnImage(let url, let contentType):
            let served = contentType.map { " (served as \($0))" } ?? ""
            return "\(RemoteURL.redacted(url)): not an image\(served); nothing was stored"
        case .unsupportedFormat(let url, let format):
            return "\(RemoteURL.redacted(url)): \(format.displayName) images are not supported; nothing was stored"
        case .corruptImage(let url, let reason): return "\(RemoteURL.redacted(url)): \(reason); nothing was stored"
        case .cacheUnwritable(let error): return "cache not writable: \(error)"
        case .libraryMissing(let message): return message
        }
    }
}
