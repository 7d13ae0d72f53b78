import Foundation
import Testing

/// Bad input as a new user would try it: a one-line error naming the problem,
/// a documented exit status, and a cache left as it was.
@Suite final class FetchErrorTests: LoopbackCacheSuite {
    /// Runs a failing fetch after one good entry is stored, and checks the cache
    /// kept exactly that entry, and whether the URL went on the failed list.
    func expectFailureLeavesCacheUnchanged(_ arguments: [String], status: Int32, messageContains text: String,
                                           remembered: Bool, sourceLocation: SourceLocation = #_sourceLocation) throws {
        _ = try fetch(["fetch", server.url("logo.png")])
        let before = CacheInspection.storedFiles(under: cacheRoot)
        let result = try fetch(arguments)
        #expect(result.status == status, "\(result.standardError)", sourceLocation: sourceLocation)
        #expect(result.errorLines.count == 1, "\(result.standardError)", sourceLocation: sourceLocation)
        #expect(result.errorLines.first?.hasPrefix("imgcache: error: ") == true, sourceLocation: sourceLocation)
        #expect(result.standardError.contains(text), "\(result.standardError)", sourceLocation: sourceLocation)
        // The failed URL keeps its line on stdout, empty.
        #expect(result.output == "\n", sourceLocation: sourceLocation)
        #expect(CacheInspection.storedFiles(under: cacheRoot) == before, sourceLocation: sourceLocation)
        #expect(CacheInspection.failedRecords(inNamespace: cacheRoot + "/default").count == (remembered ? 1 : 0),
                "remembered as failed", sourceLocation: sourceLocation)
    }

    @Test(arguments: [
        ("page.html", "not an image (served as text/html)"),
        ("fake.png", "not an image (served as image/png)"),
        ("broken.png", "corrupt PNG image: IHDR: CRC error"),
    ])
    func aPayloadThatIsNotAStorableImageIsRejected(path: String, reason: String) throws {
        try expectFailureLeavesCacheUnchanged(["fetch", server.url(path)], status: 1, messageContains: reason, remembered: true)
    }

    @Test func aDecompressionBombIsRefusedFromItsHeader() throws {
        // 69 bytes announcing 50000x50000 RGBA pixels (10 GB decoded).
        try expectFailureLeavesCacheUnchanged(
            ["fetch", server.url("bomb.png")], status: 1,
            messageContains: "\(server.url("bomb.png")): 50000×50000 pixels is over the limit of 100 megapixels (--max-pixels); nothing was stored",
            remembered: false)
    }

    @Test func aFileCutShortIsRefusedByTheHeaderCheck() throws {
        // cut.jpg is photo.jpg cut two thirds in: its header is whole, its end is missing.
        try expectFailureLeavesCacheUnchanged(
            ["fetch", server.url("cut.jpg")], status: 1,
            messageContains: "\(server.url("cut.jpg")): truncated JPEG image: the file ends before its end-of-image marker",
            remembered: true)
    }

    @Test func verifyFullRefusesScrambledPixelsThatTheHeaderCheckLetsThrough() throws {
        // garbled.jpg is photo.jpg with 64 bytes of its scan data scrambled: whole, but not decodable.
        let cut = server.url("garbled.jpg")
        let header = try fetch(["--json", "fetch", cut])
        #expect(header.status == 0, "\(header.standardError)")
        _ = try fetch(["clear"])
        let full = try fetch(["fetch", "--verify", "full", cut])
        #expect(full.status == 1)
        #expect(full.standardError.contains("\(cut): corrupt JPEG image: "), "\(full.standardError)")
        #expect(CacheInspection.storedFiles(under: cacheRoot + "/default").isEmpty)
        // Not remembered: a plain fetch (header check) may still take it.
        #expect(CacheInspection.failedRecords(inNamespace: cacheRoot + "/default").isEmpty)
        // Whole images pass the full check.
        let whole = ["photo.jpg", "logo.png", "anim.gif", "sticker.webp", "lossless.webp"].map { server.url($0) }
        #expect(try fetch(["fetch", "--verify", "full"] + whole).status == 0)
    }

    @Test func maxPixelsRefusesBigImagesAndLetsSmallerOnesIn() throws {
        // photo.jpg is 96x64: 6144 pixels.
        let refused = try fetch(["fetch", "--max-pixels", "6143", server.url("photo.jpg")])
        #expect(refused.status == 1)
        #expect(refused.standardError.contains("96×64 pixels is over the limit of 6143 pixels"))
        let accepted = try fetch(["fetch", "--max-pixels", "96x64", server.url("photo.jpg")])
        #expect(accepted.status == 0, "\(accepted.standardError)")
    }

    @Test(arguments: [(404, "HTTP 404 Not Found"), (410, "HTTP 410 Gone"), (500, "HTTP 500 Internal Server Error"),
                      (503, "HTTP 503 Service Unavailable")])
    func aNon2xxStatusIsAnError(code: Int, text: String) throws {
        let url = server.url("status/\(code)")
        try expectFailureLeavesCacheUnchanged(["fetch", url], status: 1, messageContains: "\(url): \(text)", remembered: code < 500)
    }

    @Test func aRedirectLoopStops() throws {
        try expectFailureLeavesCacheUnchanged(["fetch", server.url("loop")], status: 1, messageContains: "more than 10 redirects",
                                              remembered: false)
    }

    @Test func aRedirectToAFileURLIsRefused() throws {
        try expectFailureLeavesCacheUnchanged(["fetch", server.url("to-file")], status: 1,
                                              messageContains: "redirected to a 'file:' URL, not followed (redirects are followed to http and https only)",
                                              remembered: true)
    }

    /// The scheme named is the redirect's, and the message says it was a redirect.
    @Test func aRedirectToADataURLIsRefusedAndNamed() throws {
        try expectFailureLeavesCacheUnchanged(["fetch", server.url("to-data")], status: 1,
                                              messageContains: "\(server.url("to-data")): redirected to a 'data:' URL, not followed", remembered: true)
    }

    /// A server that answers in another protocol is said to, and the next run tries again (not remembered).
    @Test func aServerThatDoesNotAnswerInHTTPIsSaidToDoSo() throws {
        let faults = try FaultServer(directory: Paths.fixtures.path)
        defer { faults.stop() }
        let url = "http://127.0.0.1:\(faults.port)/not-http"
        try expectFailureLeavesCacheUnchanged(["fetch", url], status: 1, messageContains: "\(url): the server's answer is not HTTP", remembered: false)
        #expect(!(try fetch(["fetch", url]).standardError.contains("unsupported scheme")))
    }

    @Test func anUnreachablePortIsConnectionRefused() throws {
        let port = try NginxServer.freePort()
        try expectFailureLeavesCacheUnchanged(["fetch", "http://127.0.0.1:\(port)/a.png"], status: 1,
                                              messageContains: "http://127.0.0.1:\(port)/a.png: connection refused", remembered: false)
    }

    @Test func anFTPURLIsAnUnsupportedScheme() throws {
        // Refused before any request, so remembering it would save none.
        try expectFailureLeavesCacheUnchanged(["fetch", "ftp://127.0.0.1/a.png"], status: 1,
                                              messageContains: "unsupported scheme 'ftp'", remembered: false)
    }

    @Test(arguments: [("not a url", "contains a space"), ("127.0.0.1/a.png", "no scheme"),
                      ("http:/a.png", "expected '//'"), ("http:///a.png", "no host"), ("http://h:99999/a.png", "bad port")])
    func aMalformedURLIsNamed(url: String, reason: String) throws {
        try expectFailureLeavesCacheUnchanged(["fetch", url], status: 1, messageContains: "invalid URL", remembered: false)
        #expect(try fetch(["fetch", url]).standardError.contains(reason))
    }

    @Test func credentialsInAURLAreNotPrinted() throws {
        let port = try NginxServer.freePort()
        let result = try fetch(["--json", "fetch", "http://alice:s3cret@127.0.0.1:\(port)/a.png"])
        #expect(!result.standardError.contains("s3cret") && !result.output.contains("s3cret"))
        #expect(result.standardError.contains("http://***@127.0.0.1"))
    }

    @Test func anUnwritableCacheFailsBeforeDownloadingWithStatus73() throws {
        // A regular file where the cache folder should be: no user, not even root, can write there.
        let blocked = home.appending("blocked")
        try #require(FileManager.default.createFile(atPath: blocked, contents: Data("x".utf8)))
        let result = try ImgCacheProcess.run(["--cache-dir", blocked + "/cache", "fetch", server.url("logo.png")], home: home.path)
        #expect(result.status == 73)
        #expect(result.errorLines.count == 1)
        #expect(result.standardError.contains("cache not writable"))
        #expect(server.requestCount("logo.png") == 0)
    }

    @Test(.enabled(if: getuid() != 0, "root ignores permission bits"))
    func aReadOnlyCacheFolderFailsWithStatus73() throws {
        _ = try fetch(["fetch", server.url("logo.png")])
        chmod(cacheRoot + "/default", 0o500)
        let result = try fetch(["fetch", server.url("photo.jpg")])
        #expect(result.status == 73)
        #expect(result.standardError.contains("Permission denied"))
    }

    @Test(arguments: ["../x", "a/b", "", ".hidden", String(repeating: "n", count: 65)])
    func aBadNamespaceIsAUsageError(name: String) throws {
        let result = try fetch(["-n", name, "fetch", server.url("logo.png")])
        #expect(result.status == 64)
        #expect(result.errorLines.first?.contains("invalid value") == true)
        #expect(CacheInspection.files(under: home.path).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: cacheRoot))
    }

    @Test func aBadNamespaceFromTheEnvironmentIsAUsageError() throws {
        let result = try fetch(["fetch", server.url("logo.png")], environment: ["IMGCACHE_NAMESPACE": "../../etc"])
        #expect(result.status == 64)
        #expect(result.standardError.contains("invalid namespace from IMGCACHE_NAMESPACE"))
        #expect(!FileManager.default.fileExists(atPath: cacheRoot))
    }

    @Test func noURLIsAUsageError() throws {
        let result = try fetch(["fetch"])
        #expect(result.status == 64)
        #expect(result.errorLines == ["imgcache: error: 'fetch' needs a URL (or --input FILE)", "Run 'imgcache fetch --help' for usage."])
    }

    @Test func anUnwritableOutputFileIsStatus74AndTheEntryIsKept() throws {
        let result = try fetch(["fetch", "-o", home.appending("no/such/folder/x.png"), server.url("logo.png")])
        #expect(result.status == 74)
        #expect(result.standardError.contains("cannot write"))
        #expect(CacheInspection.storedFiles(under: cacheRoot).count == 1)
    }
}
