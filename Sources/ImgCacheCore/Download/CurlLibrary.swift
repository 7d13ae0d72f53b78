import CImgCacheShims

/// libcurl, loaded on first use. Loading also runs `curl_global_init` once.
enum CurlLibrary {
    /// Loads libcurl, or explains why it cannot be.
    static func load() throws(DownloadError) {
        var message = [CChar](repeating: 0, count: 256)
        guard ic_curl_load(&message, message.count) == 0 else {
            throw .libraryMissing(String(decoding: message.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
    }
}
