#if canImport(Glibc)
import Glibc
#endif
import CImgCacheShims

/// One attempt at a download: an easy handle configured for the request, and
/// the sink its body goes to. Lives on the download thread only.
final class Transfer {
    let easy: CurlEasy
    let sink: TransferSink
    /// Keeps the sink alive while libcurl holds a raw pointer to it.
    private let retainedSink: Unmanaged<TransferSink>
    /// The proxy the request goes through, as far as it is known (`-x`, else the environment's for
    /// its scheme when no `no_proxy` may exempt it), for a message that names the proxy, not the host.
    let proxy: String?

    /// libcurl's receive buffer: large reads mean few system calls and callbacks
    /// per image (the command-line tool's default is 100 KiB).
    static let receiveBufferSize = 256 * 1024

    /// Configures `easy`; nothing is sent yet, and no file is made until a body outgrows memory.
    init(request: DownloadRequest, easy: CurlEasy, configuration: DownloadConfiguration, share: CurlShare?) throws(DownloadError) {
        self.easy = easy
        proxy = Transfer.proxy(for: request.url, configured: configuration.proxy)
        sink = TransferSink(spillDirectory: request.bodyDirectory, maximumBytes: request.maximumBytes,
                            memoryLimit: max(configuration.memoryBodyLimit, BodyCheck.probeLimit),
                            idleTimeout: request.timeout, bodyCheck: request.bodyCheck)
        retainedSink = Unmanaged.passRetained(sink)
        do {
            try configure(request, configuration: configuration, share: share)
        } catch {
            discard()
            throw error
        }
    }

    deinit {
        retainedSink.release()
    }

    /// The proxy `url` goes through: `configured` (`-x`; "" is none), else libcurl's variables for
    /// its scheme; nil when none, or when `no_proxy` may exempt the host (not worked out here).
    static func proxy(for url: RemoteURL, configured: String?) -> String? {
        if let configured { return configured.isEmpty ? nil : configured }
        let environment = Environment.process
        guard (environment["no_proxy"] ?? environment["NO_PROXY"] ?? "").isEmpty else { return nil }
        let names = url.scheme == "https" ? ["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"] : ["http_proxy", "all_proxy", "ALL_PROXY"]
        return names.lazy.compactMap { environment[$0] }.first { !$0.isEmpty }
    }

    private func configure(_ request: DownloadRequest, configuration: DownloadConfiguration, share: CurlShare?) throws(DownloadError) {
        easy.reset()
        easy.refusesPrivateAddresses = configuration.refusesPrivateAddresses
        let timeoutSeconds = max(1, Int(request.timeout.rounded(.up)))
        try easy.set(CURLOPT_URL, request.url.string)
        // Signals belong to the process; timeouts do not need SIGALRM with the threaded resolver.
        try easy.set(CURLOPT_NOSIGNAL, 1)
        // Best effort: libcurl 7.88 refuses to resize the buffer of a handle that
        // still holds one (after an HTTP/2 transfer); it then reads 16 KiB at a time.
        try? easy.set(CURLOPT_BUFFERSIZE, Transfer.receiveBufferSize)
        try easy.set(CURLOPT_PROTOCOLS_STR, "http,https")
        try easy.set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        try easy.set(CURLOPT_FOLLOWLOCATION, 1)
        try easy.set(CURLOPT_MAXREDIRS, request.maximumRedirects)
        try easy.set(CURLOPT_CONNECTTIMEOUT_MS, Int((request.connectTimeout ?? request.timeout) * 1000))
        // An idle timeout, as NSURLRequest's timeoutInterval is: a large image on a
        // slow link is fine as long as bytes keep coming. The sink enforces it to
        // the second; libcurl's low-speed check stays as a backstop and makes
        // libcurl call the progress callback while the connection is silent.
        try easy.set(CURLOPT_LOW_SPEED_LIMIT, 1)
        try easy.set(CURLOPT_LOW_SPEED_TIME, timeoutSeconds)
        // Over TLS, wait for a connection being set up (ALPN tells soon whether it is
        // HTTP/2) rather than open another. Not over plain HTTP: that is HTTP/1.1, and
        // one silent server would hold every other transfer to it behind the first.
        if request.url.scheme == "https" { try easy.set(CURLOPT_PIPEWAIT, 1) }
        if let maximumBytes = request.maximumBytes {
            try easy.set(CURLOPT_MAXFILESIZE_LARGE, Int(maximumBytes))
        }
        if let credentials = request.credentials {
            // Basic is libcurl's default HTTPAUTH; credentials go in options, never in the URL.
            try easy.set(CURLOPT_USERNAME, credentials.user)
            try easy.set(CURLOPT_PASSWORD, credentials.password)
        }
        if let maximumTime = request.maximumTime { try easy.set(CURLOPT_TIMEOUT_MS, Int(maximumTime * 1000)) }
        if let proxy = configuration.proxy { try easy.set(CURLOPT_PROXY, proxy) }
        switch configuration.netrc {
        case nil: break
        case .home?: try easy.set(CURLOPT_NETRC, Int(CURL_NETRC_OPTIONAL.rawValue))
        case .file(let path)?:
            try easy.set(CURLOPT_NETRC, Int(CURL_NETRC_OPTIONAL.rawValue))
            try easy.set(CURLOPT_NETRC_FILE, path)
        }
        // Asks for every encoding libcurl decodes (gzip, deflate, br, zstd), and decodes
        // what comes: an image sent gzip-encoded is stored as the image.
        if request.method == .get { try easy.set(CURLOPT_ACCEPT_ENCODING, "") }
        if let bundle = configuration.certificateAuthorities.bundle { try easy.set(CURLOPT_CAINFO, bundle) }
        if let folder = configuration.certificateAuthorities.folder { try easy.set(CURLOPT_CAPATH, folder) }
        if configuration.allowInvalidCertificates {
            try easy.set(CURLOPT_SSL_VERIFYPEER, 0)
            try easy.set(CURLOPT_SSL_VERIFYHOST, 0)
        }
        if let share {
            try easy.set(CURLOPT_SHARE, pointer: share.handle)
            if let jar = configuration.cookieJar {
                try easy.set(CURLOPT_COOKIEJAR, jar)
            }
        }
        var headerLines = request.headerLines
        if let signature = request.awsSigV4 {
            try easy.set(CURLOPT_AWS_SIGV4, signature)
            // libcurl 7.88 signs every header of the list, even one it then does
            // not send ("Expect:"), and stores (and botocore-based servers)
            // recompute signatures without User-Agent and Expect: a signed
            // request lists only what must be signed, its agent set apart.
            headerLines = request.headers.map(\.line)
            try easy.set(CURLOPT_USERAGENT, DownloadRequest.defaultUserAgent)
        }
        switch request.method {
        case .get: break
        case .put:
            try easy.set(CURLOPT_CUSTOMREQUEST, "PUT")
            if let path = request.uploadFile {
                try sendFile(path)
            } else {
                try easy.setBody(request.uploadBody ?? [])
            }
            // Not a form; and, unsigned, no "Expect: 100-continue" round trip before the body.
            headerLines += ["Content-Type: application/octet-stream"] + (request.awsSigV4 == nil ? ["Expect:"] : [])
        case .head:
            try easy.set(CURLOPT_NOBODY, 1)
        case .delete, .mkcol, .move:
            try easy.set(CURLOPT_CUSTOMREQUEST, request.method.rawValue)
        }
        try easy.setHeaders(headerLines)
        let context = retainedSink.toOpaque()
        try easy.set(CURLOPT_WRITEDATA, pointer: context)
        try easy.set(CURLOPT_HEADERDATA, pointer: context)
        try easy.set(CURLOPT_WRITEFUNCTION, callback: { data, size, count, user in
            let sink = Unmanaged<TransferSink>.fromOpaque(user!).takeUnretainedValue()
            let length = size * count
            return sink.receiveBody(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
        })
        try easy.set(CURLOPT_NOPROGRESS, 0)
        try easy.set(CURLOPT_XFERINFODATA, pointer: context)
        try easy.setProgressCallback { user, _, downloaded, _, uploaded in
            Unmanaged<TransferSink>.fromOpaque(user!).takeUnretainedValue()
                .checkIdle(uploaded: Int64(uploaded), downloaded: Int64(downloaded)) ? 0 : 1
        }
        try easy.set(CURLOPT_HEADERFUNCTION, callback: { data, size, count, user in
            let sink = Unmanaged<TransferSink>.fromOpaque(user!).takeUnretainedValue()
            let length = size * count
            sink.receiveHeader(UnsafeRawBufferPointer(start: data, count: length))
            return length
        })
    }

    /// Makes the PUT send the file at `path`, read as libcurl asks for it; the sink
    /// holds the file open until the transfer is let go.
    private func sendFile(_ path: String) throws(DownloadError) {
        let descriptor: Int32
        switch SystemCall.open(path, O_RDONLY | O_CLOEXEC) {
        case .success(let opened): descriptor = opened
        case .failure(let errno): throw .localWrite(SystemError("open", path: path, errno: errno))
        }
        sink.uploadDescriptor = descriptor
        let size: Int
        do throws(SystemError) { size = Int(try FileSystem.status(descriptor: descriptor, path: path).size) } catch {
            throw .localWrite(error)
        }
        try easy.set(CURLOPT_UPLOAD, 1)
        try easy.set(CURLOPT_INFILESIZE_LARGE, size)
        try easy.set(CURLOPT_READDATA, pointer: retainedSink.toOpaque())
        try easy.set(CURLOPT_READFUNCTION, callback: { data, size, count, user in
            Unmanaged<TransferSink>.fromOpaque(user!).takeUnretainedValue().readUpload(into: data, count: size * count)
        })
    }

    /// The response, or why there is none, once libcurl reports the transfer done.
    func outcome(_ code: CURLcode, request: DownloadRequest) -> Result<DownloadResponse, DownloadError> {
        if code != CURLE_OK {
            if let reason = sink.abortReason { return .failure(reason == .httpStatus(407) ? .proxyAuthentication(proxy: proxy) : reason) }
            let status = easy.info(CURLINFO_RESPONSE_CODE)
            return .failure(DownloadError.classify(code, easy: easy, request: request, received: sink.receivedBytes,
                                                   redirectTarget: (300..<400).contains(status) ? sink.headers["location"] : nil, proxy: proxy))
        }
        let status = easy.info(CURLINFO_RESPONSE_CODE)
        let accepted = (200..<300).contains(status) || (status == 304 && request.validators != nil)
        // 407 comes from a proxy only (RFC 9110 §15.5.8): the proxy's trouble, never the URL's.
        guard accepted else { return .failure(status == 407 ? .proxyAuthentication(proxy: proxy) : .httpStatus(status)) }
        if status != 304, let refusal = sink.finishBody() { return .failure(refusal) }
        var response = DownloadResponse(
            statusCode: status,
            effectiveURL: easy.stringInfo(CURLINFO_EFFECTIVE_URL) ?? request.url.string,
            etag: sink.headers["etag"],
            lastModified: sink.headers["last-modified"],
            contentType: sink.headers["content-type"],
            byteCount: sink.receivedBytes)
        response.announcedLength = sink.expectedBytes
        response.robotsTag = sink.headers["x-robots-tag"]
        response.freshness = HTTPFreshness(cacheControl: sink.headers["cache-control"], expires: sink.headers["expires"],
                                           date: sink.headers["date"], age: sink.headers["age"],
                                           lastModified: sink.headers["last-modified"])
        return .success(response)
    }

    /// Drops the body kept so far (a failed or abandoned attempt).
    func discard() {
        sink.discardBody()
    }
}
