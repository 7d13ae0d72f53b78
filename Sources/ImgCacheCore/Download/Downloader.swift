#if canImport(Glibc)
import Glibc
#endif
import CImgCacheShims

/// Downloads one URL at a time into a file descriptor through libcurl, with
/// SDWebImageDownloader's defaults. The handle is reused, so connections are
/// kept alive between downloads of one process.
public final class Downloader {
    private let easy: CurlEasy

    /// Loads libcurl; fails only when it cannot be loaded.
    public init() throws(DownloadError) {
        easy = try CurlEasy()
    }

    /// Downloads `request` and writes the body to `descriptor`. Succeeds only for a
    /// 2xx final response whose whole body was written.
    public func download(_ request: DownloadRequest, to descriptor: Int32, path: String) throws(DownloadError) -> DownloadResponse {
        let sink = TransferSink(descriptor: descriptor, path: path, maximumBytes: request.maximumBytes)
        let unmanagedSink = Unmanaged.passRetained(sink)
        defer { unmanagedSink.release() }
        try configure(request, sink: unmanagedSink.toOpaque())

        let code = easy.perform()
        if code != CURLE_OK {
            if let reason = sink.abortReason { throw reason }
            throw classify(code, request: request, received: sink.receivedBytes)
        }
        let status = easy.info(CURLINFO_RESPONSE_CODE)
        guard (200..<300).contains(status) else { throw .httpStatus(status) }
        return DownloadResponse(
            statusCode: status,
            effectiveURL: easy.stringInfo(CURLINFO_EFFECTIVE_URL) ?? request.url.string,
            etag: sink.headers["etag"],
            lastModified: sink.headers["last-modified"],
            contentType: sink.headers["content-type"],
            byteCount: sink.receivedBytes
        )
    }

    private func configure(_ request: DownloadRequest, sink: UnsafeMutableRawPointer) throws(DownloadError) {
        let timeoutSeconds = max(1, Int(request.timeout.rounded(.up)))
        try easy.set(CURLOPT_URL, request.url.string)
        try easy.set(CURLOPT_NOSIGNAL, 1)
        try easy.set(CURLOPT_PROTOCOLS_STR, "http,https")
        try easy.set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        try easy.set(CURLOPT_FOLLOWLOCATION, 1)
        try easy.set(CURLOPT_MAXREDIRS, request.maximumRedirects)
        try easy.set(CURLOPT_CONNECTTIMEOUT_MS, Int(request.timeout * 1000))
        // An idle timeout, as NSURLRequest's timeoutInterval is: a large image on a
        // slow link is fine as long as bytes keep coming.
        try easy.set(CURLOPT_LOW_SPEED_LIMIT, 1)
        try easy.set(CURLOPT_LOW_SPEED_TIME, timeoutSeconds)
        try easy.set(CURLOPT_USERAGENT, DownloadRequest.defaultUserAgent)
        if let maximumBytes = request.maximumBytes {
            try easy.set(CURLOPT_MAXFILESIZE_LARGE, Int(maximumBytes))
        }
        var headerLines = ["Accept: " + DownloadRequest.defaultAccept]
        headerLines += request.headers
        try easy.setHeaders(headerLines)
        try easy.set(CURLOPT_WRITEDATA, pointer: sink)
        try easy.set(CURLOPT_HEADERDATA, pointer: sink)
        try easy.set(CURLOPT_WRITEFUNCTION, callback: { data, size, count, user in
            let sink = Unmanaged<TransferSink>.fromOpaque(user!).takeUnretainedValue()
            let length = size * count
            return sink.receiveBody(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
        })
        try easy.set(CURLOPT_HEADERFUNCTION, callback: { data, size, count, user in
            let sink = Unmanaged<TransferSink>.fromOpaque(user!).takeUnretainedValue()
            let length = size * count
            sink.receiveHeader(UnsafeRawBufferPointer(start: data, count: length))
            return length
        })
    }

    /// Maps a libcurl result code to the cause a user can act on.
    private func classify(_ code: CURLcode, request: DownloadRequest, received: Int64) -> DownloadError {
        let text = String(cString: ic_curl_easy_strerror(code))
        let osError = Int32(easy.info(CURLINFO_OS_ERRNO))
        switch code {
        case CURLE_UNSUPPORTED_PROTOCOL:
            let target = easy.stringInfo(CURLINFO_REDIRECT_URL) ?? easy.stringInfo(CURLINFO_EFFECTIVE_URL) ?? ""
            return .unsupportedScheme(String(target.prefix(while: { $0 != ":" })).lowercased())
        case CURLE_URL_MALFORMAT: return .invalidURL(text)
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: return .dns(request.url.host)
        case CURLE_COULDNT_CONNECT:
            return osError == ECONNREFUSED ? .connectionRefused : .connectFailed(osError != 0 ? String(cString: strerror(osError)) : text)
        case CURLE_OPERATION_TIMEDOUT: return .timeout(seconds: request.timeout)
        case CURLE_TOO_MANY_REDIRECTS: return .tooManyRedirects(limit: request.maximumRedirects)
        case CURLE_PARTIAL_FILE: return .truncated("received \(received) bytes, fewer than announced")
        case CURLE_FILESIZE_EXCEEDED: return .tooLarge(limit: request.maximumBytes ?? 0)
        case CURLE_ABORTED_BY_CALLBACK: return .cancelled
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR:
            return osError == ECONNRESET ? .connectionReset : .connectionLost(text)
        case CURLE_GOT_NOTHING: return .connectionLost("the server closed the connection without a reply")
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH:
            return .tlsCertificate(text)
        case CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER, CURLE_SSL_ENGINE_NOTFOUND,
             CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_SHUTDOWN_FAILED, CURLE_SSL_CRL_BADFILE:
            return .tlsHandshake(text)
        default: return .other(code: Int(code.rawValue), message: text)
        }
    }
}
