/// Why a download failed, one case per cause a user can act on.
public enum DownloadError: Error, Equatable, Sendable {
    /// libcurl refused the URL.
    case invalidURL(String)
    /// Not http or https.
    case unsupportedScheme(String)
    /// A redirect to a URL of another scheme than http and https (`data:`, `ftp:`, `file:`), not followed.
    case redirectedToScheme(String)
    /// The server answered with something that is not HTTP (another protocol on the port, or HTTP/0.9).
    case notHTTP(String)
    /// The host name did not resolve.
    case dns(String)
    /// Nothing listens at the address (ECONNREFUSED).
    case connectionRefused
    /// The connection could not be made for another reason (unreachable network, …).
    case connectFailed(String)
    /// The peer reset the connection.
    case connectionReset
    /// The connection closed before a whole response arrived.
    case connectionLost(String)
    /// The TLS handshake failed (interrupted, protocol error).
    case tlsHandshake(String)
    /// The server's certificate was not accepted.
    case tlsCertificate(String)
    /// No progress for the configured time (`--timeout`).
    case timeout(seconds: Double)
    /// No connection within the configured time (`--connect-timeout`, else `--timeout`).
    case connectTimeout(seconds: Double)
    /// The whole transfer took longer than allowed (`--max-time`).
    case maximumTimeExceeded(seconds: Double)
    /// The final response's status was not 2xx.
    case httpStatus(Int)
    /// A proxy answered 407: it wants credentials. About the proxy, not the URL (`proxy`: it, when known).
    case proxyAuthentication(proxy: String?)
    /// The body grew past the size limit.
    case tooLarge(limit: Int64)
    /// The body ended before its announced Content-Length.
    case truncated(String)
    /// More redirects than allowed.
    case tooManyRedirects(limit: Int)
    /// The transfer was cancelled.
    case cancelled
    /// Writing the downloaded bytes to disk failed.
    case localWrite(SystemError)
    /// libcurl could not be loaded.
    case libraryMissing(String)
    /// A limit of this process or machine stopped the transfer (no descriptor left for a socket):
    /// nothing about the host.
    case systemLimit(SystemError)
    /// The body's first bytes were refused as they arrived (`BodyCheck`).
    case refused(BodyRefusal)
    /// Any other libcurl failure: its code and text.
    case other(code: Int, message: String)
    /// Not tried: the host failed to connect `failures` times in a row this run (`cause`, the last).
    case hostGivenUp(host: String, failures: Int, cause: String)
    /// Not connected: the address (after DNS, or a redirect's) is loopback, private, link-local,
    /// multicast or unspecified, which a server's sources may not be.
    case privateAddress(String)

    /// The short human cause ("HTTP 404", "connection refused").
    public var reason: String {
        switch self {
        case .invalidURL(let detail): return "invalid URL: \(detail)"
        case .unsupportedScheme(let scheme): return "unsupported scheme '\(scheme)' (only http and https)"
        case .redirectedToScheme(let scheme):
            return "redirected to a '\(scheme):' URL, not followed (redirects are followed to http and https only)"
        case .notHTTP(let detail): return "the server's answer is not HTTP (\(detail))"
        case .dns(let detail): return "cannot resolve host: \(detail)"
        case .connectionRefused: return "connection refused"
        case .connectFailed(let detail): return "cannot connect: \(detail)"
        case .connectionReset: return "connection reset by peer"
        case .connectionLost(let detail): return "connection lost: \(detail)"
        case .tlsHandshake(let detail): return "TLS handshake failed: \(detail)"
        case .tlsCertificate(let detail): return "TLS certificate not accepted: \(detail)"
        case .timeout(let seconds): return "timed out after \(DownloadError.formatSeconds(seconds)) without progress"
        case .connectTimeout(let seconds): return "connect timed out after \(DownloadError.formatSeconds(seconds))"
        case .maximumTimeExceeded(let seconds): return "not finished within \(DownloadError.formatSeconds(seconds)) (the maximum time)"
        case .httpStatus(let code): return "HTTP \(code)" + (DownloadError.statusText[code].map { " " + $0 } ?? "")
        case .proxyAuthentication(let proxy):
            let named = "HTTP 407 Proxy Authentication Required from the proxy" + (proxy.map { " " + RemoteURL.displayed($0) } ?? "")
            // Credentials given in the proxy's URL were refused; else none were given.
            if let proxy, URLText.userInfo(of: proxy.contains("://") ? proxy : "http://" + proxy) != nil {
                return named + ": it refused the user and password given"
            }
            return named + ": give it a user and password (-x http://USER:PASSWORD@HOST:PORT, or in the proxy variable)"
        case .tooLarge(let limit): return "body larger than the limit of \(ByteSize.spelledLimit(limit)) (--max-size)"
        case .truncated(let detail): return "body cut short: \(detail)"
        case .tooManyRedirects(let limit): return "more than \(Plural.count(limit, "redirect"))"
        case .cancelled: return "cancelled"
        case .localWrite(let error): return error.description
        case .libraryMissing(let message): return message
        case .systemLimit(let error): return error.description
        case .refused(.notAnImage(let contentType)): return "not an image" + (contentType.map { " (served as \($0))" } ?? "")
        case .refused(.unsupported(let format)): return "\(format.displayName) images are not supported"
        case .refused(.tooManyPixels(let width, let height, let embedded)):
            return "\(PixelLimit.counted(width: width, height: height, embedded: embedded)), over the limit"
        case .refused(.inflatesTooMuch(let encoding)):
            return "grew more than \(TransferSink.maximumExpansion) times as its Content-Encoding (\(encoding)) was decoded: refused as a decompression bomb"
        case .other(let code, let message): return "\(message) (curl error \(code))"
        case .privateAddress(let address):
            return "refused to connect to \(address): a loopback, private, link-local, multicast or unspecified address"
        case .hostGivenUp(let host, let failures, let cause):
            return "not tried: \(host) failed \(failures) times in a row (\(cause)); given up for this run"
        }
    }

    /// Whether trying again later may succeed: network trouble, 5xx,
    /// 408 and 429 are transient; everything about the URL or its content is not.
    public var isTransient: Bool {
        switch self {
        case .dns, .connectionRefused, .connectFailed, .connectionReset, .connectionLost,
             .tlsHandshake, .timeout, .connectTimeout, .maximumTimeExceeded, .truncated, .cancelled, .localWrite, .libraryMissing, .other,
             .notHTTP, .systemLimit, .proxyAuthentication:
            return true
        case .httpStatus(let code):
            return code >= 500 || code == 408 || code == 429
        case .invalidURL, .unsupportedScheme, .redirectedToScheme, .tlsCertificate, .tooLarge, .tooManyRedirects, .refused, .hostGivenUp,
             .privateAddress:
            return false
        }
    }

    /// Whether `--retries` tries it again: a transient failure on the network's
    /// or the server's side. A cancellation or a local write failure is not retried.
    public var isRetryable: Bool {
        switch self {
        case .cancelled, .localWrite, .libraryMissing, .systemLimit, .proxyAuthentication: return false
        default: return isTransient
        }
    }

    /// Whether a failed refresh answers with the entry it meant to replace (stale-if-error): a
    /// passing failure, or a host given up for the run (it could not be reached).
    public var servesStale: Bool {
        if case .hostGivenUp = self { return true }
        return isRetryable
    }

    static func formatSeconds(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
    }

    static let statusText: [Int: String] = [
        400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
        407: "Proxy Authentication Required", 408: "Request Timeout", 410: "Gone", 429: "Too Many Requests", 500: "Internal Server Error",
        502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
    ]
}
