import CImgCacheShims

/// One libcurl easy handle. Not thread-safe: it has exactly one owner at a time.
final class CurlEasy {
    let handle: UnsafeMutableRawPointer
    private var headerList: UnsafeMutablePointer<curl_slist>?
    /// libcurl's own words for the last failure (CURLOPT_ERRORBUFFER), more
    /// precise than the result code's text: "SSL certificate problem:
    /// self-signed certificate" rather than "peer certificate was not OK".
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
    /// socket()'s errno for the last connection tried (0: it opened), which libcurl does not keep,
    /// and whether a private address was refused.
    private let socketGuard = UnsafeMutablePointer<ic_socket_guard>.allocate(capacity: 1)

    init() throws(DownloadError) {
        try CurlLibrary.load()
        guard let handle = ic_curl_easy_init() else {
            errorBuffer.deallocate()
            socketGuard.deallocate()
            throw .other(code: -1, message: "curl_easy_init failed")
        }
        self.handle = handle
        attachErrorBuffer()
    }

    deinit {
        ic_curl_easy_cleanup(handle)
        if let headerList { ic_curl_slist_free_all(headerList) }
        errorBuffer.deallocate()
        socketGuard.deallocate()
    }

    /// Why the last socket could not be opened (EMFILE: no descriptor left), 0 when it opened.
    var socketErrno: Int32 { socketGuard.pointee.error }

    /// Whether connections to loopback, private, link-local, multicast and unspecified addresses
    /// are refused: each one the transfer opens, redirects' included, checked on the address
    /// about to be connected (after DNS, so a name that resolves to one is refused too).
    var refusesPrivateAddresses: Bool {
        get { socketGuard.pointee.refuses_private != 0 }
        set { socketGuard.pointee.refuses_private = newValue ? 1 : 0 }
    }

    /// The private address the last transfer was refused, nil when none was.
    var refusedAddress: String? {
        guard socketGuard.pointee.refused != 0 else { return nil }
        return withUnsafeBytes(of: socketGuard.pointee.address) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    /// The detail libcurl wrote for the last failed transfer, if any.
    var errorDetail: String? {
        errorBuffer.pointee == 0 ? nil : String(cString: errorBuffer)
    }

    private func attachErrorBuffer() {
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        _ = ic_curl_easy_setopt_pointer(handle, CURLOPT_ERRORBUFFER, UnsafeMutableRawPointer(errorBuffer))
        socketGuard.initialize(to: ic_socket_guard())
        _ = ic_curl_easy_guard_sockets(handle, socketGuard)
    }

    func set(_ option: CURLoption, _ value: Int) throws(DownloadError) {
        try check(ic_curl_easy_setopt_long(handle, option, value), option)
    }

    func set(_ option: CURLoption, _ value: String) throws(DownloadError) {
        try check(ic_curl_easy_setopt_string(handle, option, value), option)
    }

    func set(_ option: CURLoption, pointer: UnsafeMutableRawPointer?) throws(DownloadError) {
        try check(ic_curl_easy_setopt_pointer(handle, option, pointer), option)
    }

    /// The bytes a request sends, copied by libcurl (the size first: without
    /// it libcurl would take them for a C string).
    func setBody(_ bytes: [UInt8]) throws(DownloadError) {
        try set(CURLOPT_POSTFIELDSIZE_LARGE, bytes.count)
        let code = bytes.withUnsafeBytes { raw in
            ic_curl_easy_setopt_pointer(handle, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: raw.baseAddress))
        }
        try check(code, CURLOPT_COPYPOSTFIELDS)
    }

    func set(_ option: CURLoption, callback: ic_curl_data_callback) throws(DownloadError) {
        try check(ic_curl_easy_setopt_data_callback(handle, option, callback), option)
    }

    func setProgressCallback(_ callback: ic_curl_progress_callback) throws(DownloadError) {
        try check(ic_curl_easy_setopt_progress_callback(handle, callback), CURLOPT_XFERINFOFUNCTION)
    }

    /// Replaces the request's extra header lines ("Name: value").
    func setHeaders(_ lines: [String]) throws(DownloadError) {
        if let headerList { ic_curl_slist_free_all(headerList) }
        headerList = nil
        for line in lines { headerList = ic_curl_slist_append(headerList, line) }
        try check(ic_curl_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, headerList), CURLOPT_HTTPHEADER)
    }

    func perform() -> CURLcode { ic_curl_easy_perform(handle) }

    func info(_ info: CURLINFO) -> Int {
        var value = 0
        _ = ic_curl_easy_getinfo_long(handle, info, &value)
        return value
    }

    func offsetInfo(_ info: CURLINFO) -> Int64 {
        var value: curl_off_t = 0
        _ = ic_curl_easy_getinfo_off_t(handle, info, &value)
        return Int64(value)
    }

    /// Forgets the previous transfer's options; connections, cookies and caches stay.
    func reset() {
        ic_curl_easy_reset(handle)
        if let headerList { ic_curl_slist_free_all(headerList) }
        headerList = nil
        attachErrorBuffer()
    }

    func stringInfo(_ info: CURLINFO) -> String? {
        var value: UnsafePointer<CChar>?
        guard ic_curl_easy_getinfo_string(handle, info, &value) == CURLE_OK, let value else { return nil }
        return String(cString: value)
    }

    private func check(_ code: CURLcode, _ option: CURLoption) throws(DownloadError) {
        guard code == CURLE_OK else {
            throw .other(code: Int(code.rawValue), message: "cannot set curl option \(option.rawValue): " + String(cString: ic_curl_easy_strerror(code)))
        }
    }
}

/// A libcurl handle may be used by one thread at a time only: the compiler
/// refuses to hand one to another thread.
@available(*, unavailable)
extension CurlEasy: Sendable {}
