#if canImport(Glibc)
import Glibc
#endif
import CImgCacheShims

extension DownloadError {
    /// Maps a failed transfer's libcurl result code to the cause a user can act on.
    /// `redirectTarget`: the last response's Location, when it was a redirect.
    /// `proxy`: the proxy the request went through, when known: a connection it refused is said as its.
    static func classify(_ code: CURLcode, easy: CurlEasy, request: DownloadRequest, received: Int64,
                         redirectTarget: String? = nil, proxy: String? = nil) -> DownloadError {
        let generic = String(cString: ic_curl_easy_strerror(code))
        // libcurl's detail names the cause (self-signed, expired, name mismatch); its code's text does not.
        let text = easy.errorDetail.map { $0.hasSuffix("\n") ? String($0.dropLast()) : $0 } ?? generic
        let osError = easy.socketErrno != 0 ? easy.socketErrno : Int32(easy.info(CURLINFO_OS_ERRNO))
        // An https URL's tunnel the proxy refused for want of credentials.
        if easy.info(CURLINFO_HTTP_CONNECTCODE) == 407 { return .proxyAuthentication(proxy: proxy) }
        if code == CURLE_COULDNT_CONNECT, let address = easy.refusedAddress { return .privateAddress(address) }
        switch code {
        case CURLE_UNSUPPORTED_PROTOCOL:
            // libcurl says "unsupported protocol" for an answer that is not HTTP too.
            if text.contains("HTTP/0.9") { return .notHTTP(text) }
            // A redirect libcurl would not follow: its target, from libcurl or the response's Location.
            if let target = easy.stringInfo(CURLINFO_REDIRECT_URL) ?? redirectTarget, let colon = target.firstIndex(of: ":") {
                return .redirectedToScheme(String(target[..<colon]).lowercased())
            }
            let target = easy.stringInfo(CURLINFO_EFFECTIVE_URL) ?? ""
            return .unsupportedScheme(String(target.prefix(while: { $0 != ":" })).lowercased())
        case CURLE_URL_MALFORMAT: return .invalidURL(text)
        case CURLE_COULDNT_RESOLVE_PROXY:
            // The proxy's name, not the URL's host (libcurl's detail names it: "Could not resolve proxy: NAME").
            // A proxy setting that is no URL at all (libcurl: "Unsupported proxy syntax in '…'"): said as that.
            guard let named = text.firstRange(of: "proxy: ") else {
                // Not the host's failure: no host is given up for it.
                return .other(code: Int(code.rawValue), message: "the proxy (-x, or the proxy variable) is no proxy URL: \(text)")
            }
            return .dns("the proxy " + String(text[named.upperBound...]))
        case CURLE_COULDNT_RESOLVE_HOST:
            let host = easy.stringInfo(CURLINFO_EFFECTIVE_URL).flatMap { try? RemoteURL(parsing: $0).host } ?? request.url.host
            return .dns(host)
        // No descriptor for the socket: this process's limit, not the host's fault.
        case CURLE_COULDNT_CONNECT where osError == EMFILE || osError == ENFILE:
            return .systemLimit(SystemError("open a connection", errno: Errno(osError)))
        case CURLE_COULDNT_CONNECT where proxy != nil:
            let cause = osError == ECONNREFUSED ? "refused the connection" : (osError != 0 ? String(cString: strerror(osError)) : text)
            return .connectFailed("the proxy \(RemoteURL.displayed(proxy!)): \(cause)")
        case CURLE_COULDNT_CONNECT:
            return osError == ECONNREFUSED ? .connectionRefused : .connectFailed(osError != 0 ? String(cString: strerror(osError)) : text)
        case CURLE_OPERATION_TIMEDOUT:
            // Past the maximum time: that; never connected: the connect timeout; else libcurl's low-speed check.
            if let maximumTime = request.maximumTime, Double(easy.offsetInfo(CURLINFO_TOTAL_TIME_T)) / 1e6 >= maximumTime * 0.99 {
                return .maximumTimeExceeded(seconds: maximumTime)
            }
            // Never connected: the connect timeout. A connection reused from an earlier transfer has
            // no connect time of its own, so a request sent (or a connection ready to send it) says
            // the stall came after connecting: a plain timeout, which never gives a host up.
            if easy.offsetInfo(CURLINFO_CONNECT_TIME_T) == 0, easy.offsetInfo(CURLINFO_PRETRANSFER_TIME_T) == 0,
               easy.info(CURLINFO_REQUEST_SIZE) == 0 {
                return .connectTimeout(seconds: request.connectTimeout ?? request.timeout)
            }
            return .timeout(seconds: request.timeout)
        case CURLE_TOO_MANY_REDIRECTS: return .tooManyRedirects(limit: request.maximumRedirects)
        case CURLE_PARTIAL_FILE:
            let expected = easy.offsetInfo(CURLINFO_CONTENT_LENGTH_DOWNLOAD_T)
            let announced = expected > 0 ? "\(expected)" : "announced"
            return .truncated("received \(received) of \(announced) bytes")
        case CURLE_FILESIZE_EXCEEDED: return .tooLarge(limit: request.maximumBytes ?? 0)
        case CURLE_ABORTED_BY_CALLBACK: return .cancelled
        // libcurl refuses a header line past its 100 KiB with this code (and no detail) before any body.
        case CURLE_OUT_OF_MEMORY where received == 0 && easy.errorDetail == nil:
            return .other(code: Int(code.rawValue), message: "header too large: the response's header is past the 100 KiB libcurl takes")
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
