import CImgCacheShims

/// One libcurl multi handle: the connection pool and event loop that all
/// transfers of a `Downloader` share. Only the download thread uses it,
/// except `wakeup()`, which libcurl allows from any thread.
final class CurlMulti {
    let handle: UnsafeMutableRawPointer

    init() throws(DownloadError) {
        try CurlLibrary.load()
        guard let handle = ic_curl_multi_init() else { throw .other(code: -1, message: "curl_multi_init failed") }
        self.handle = handle
        // Several transfers to one HTTP/2 server share its connection.
        _ = ic_curl_multi_setopt_long(handle, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
    }

    deinit {
        _ = ic_curl_multi_cleanup(handle)
    }

    func add(_ easy: CurlEasy) throws(DownloadError) {
        let code = ic_curl_multi_add_handle(handle, easy.handle)
        guard code == CURLM_OK else {
            throw .other(code: Int(code.rawValue), message: "cannot start transfer: " + String(cString: ic_curl_multi_strerror(code)))
        }
    }

    func remove(_ easy: CurlEasy) {
        _ = ic_curl_multi_remove_handle(handle, easy.handle)
    }

    /// Moves every transfer along as far as it can go without waiting.
    func perform() {
        var running: Int32 = 0
        _ = ic_curl_multi_perform(handle, &running)
    }

    /// Waits up to `milliseconds` for socket activity, a libcurl timer, or `wakeup()`.
    func poll(milliseconds: Int) {
        var descriptors: Int32 = 0
        _ = ic_curl_multi_poll(handle, Int32(milliseconds), &descriptors)
    }

    /// Ends a `poll` early. Safe from any thread while the handle lives.
    func wakeup() {
        _ = ic_curl_multi_wakeup(handle)
    }

    /// The next finished transfer's easy handle and result.
    func nextFinished() -> (UnsafeMutableRawPointer, CURLcode)? {
        var easy: UnsafeMutableRawPointer?
        var result = CURLE_OK
        guard ic_curl_multi_next_done(handle, &easy, &result) != 0, let easy else { return nil }
        return (easy, result)
    }
}

/// A libcurl share handle holding the cookie store, so every easy handle of a
/// `Downloader` sends the cookies any of them received.
final class CurlShare {
    let handle: UnsafeMutableRawPointer

    init() throws(DownloadError) {
        guard let handle = ic_curl_share_init() else { throw .other(code: -1, message: "curl_share_init failed") }
        self.handle = handle
        _ = ic_curl_share_setopt_long(handle, CURLSHOPT_SHARE, Int(CURL_LOCK_DATA_COOKIE.rawValue))
    }

    deinit {
        _ = ic_curl_share_cleanup(handle)
    }
}

/// A libcurl handle may be used by one thread at a time only: the compiler
/// refuses to hand one to another thread.
@available(*, unavailable)
extension CurlMulti: Sendable {}

@available(*, unavailable)
extension CurlShare: Sendable {}
