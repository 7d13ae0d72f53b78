import Foundation
import ImgCacheCore
import Testing

/// Each option bit's effect, set by its flag or through `--options` by name or mask.
@Suite final class FetchOptionsTests: FaultServerSuite {
    func cacheType(_ result: RunResult) throws -> String? {
        try result.jsonLines().first?["cache"] as? String
    }

    @Test(arguments: [["--cache-only"], ["--options", "from-cache-only"], ["--options", "0x8000"], ["--options", "32768"]])
    func fromCacheOnlyNeverDownloads(_ flag: [String]) throws {
        let url = server.url("photo.jpg")
        let miss = try fetch(["fetch"] + flag + [url])
        #expect(miss.status == 1)
        #expect(miss.errorLines == ["imgcache: error: \(url): not in the cache (--cache-only)"])
        #expect(server.requests.isEmpty)
        #expect(CacheInspection.failedRecords(inNamespace: cacheRoot + "/default").isEmpty)
        #expect(try fetch(["fetch", url]).status == 0)
        #expect(try cacheType(fetch(["--json", "fetch"] + flag + [url])) == "disk")
        #expect(server.requests.count == 1)
    }

    @Test(arguments: [["--no-cache-read"], ["--options", "FromLoaderOnly"], ["--options", "0x10000"]])
    func fromLoaderOnlyDownloadsAgainAndStores(_ flag: [String]) throws {
        let url = server.url("photo.jpg")
        let first = try fetch(["fetch", url])
        let again = try fetch(["--json", "fetch"] + flag + [url])
        #expect(again.status == 0)
        #expect(try cacheType(again) == "none")
        #expect(server.requestCount("photo.jpg") == 2)
        #expect(try again.jsonLines().first?["path"] as? String == first.lines.first)
        #expect(try cacheType(fetch(["--json", "fetch", url])) == "disk")
    }

    @Test(arguments: [["--memory-only"], ["--options", "cache-memory-only"], ["--options", "4"]])
    func cacheMemoryOnlyWritesTheOutputAndStoresNothing(_ flag: [String]) throws {
        let temporary = try TemporaryDirectory("imgcache-tmpdir")
        let output = home.appending("copy.jpg")
        let result = try fetch(["--json", "fetch"] + flag + ["-o", output, server.url("photo.jpg")],
                               environment: ["TMPDIR": temporary.path])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: output)) == Paths.fixture("photo.jpg"))
        let line = try #require(try result.jsonLines().first)
        #expect(line["cache"] as? String == "none" && line["path"] is NSNull && line["width"] as? Int != nil)
        #expect(CacheInspection.storedFiles(under: cacheRoot).isEmpty)
        #expect(CacheInspection.files(under: temporary.path).isEmpty)
    }

    @Test(arguments: [["--retry-failed"], ["--options", "RetryFailed"], ["--options", "1"]])
    func retryFailedTriesAgain(_ flag: [String]) throws {
        let url = faults.baseURL + "/flaky/1/410/logo.png"
        #expect(try fetch(["fetch", url]).status == 1)
        #expect(try fetch(["fetch", url]).status == 1)
        #expect(faults.requests.count == 1)
        #expect(try fetch(["fetch"] + flag + [url]).status == 0)
        #expect(faults.requests.count == 2)
    }

    @Test(arguments: [["--refresh"], ["--options", "refresh-cached"], ["--options", "0x10"]])
    func refreshCachedRevalidates(_ flag: [String]) throws {
        let url = server.url("logo.png")
        #expect(try fetch(["fetch", url]).status == 0)
        let refreshed = try fetch(["--json", "fetch"] + flag + [url])
        #expect(try cacheType(refreshed) == "refreshed")
        #expect(server.requests.map(\.status) == [200, 304])
    }

    @Test(arguments: [["--options", "handle-cookies"], ["--options", "0x40"]])
    func handleCookiesKeepsCookiesForTheRunWithoutAJar(_ flag: [String]) throws {
        let pair = [faults.baseURL + "/set-cookie/logo.png", faults.baseURL + "/need-cookie/photo.jpg"]
        let without = try fetch(["fetch", "-j", "1"] + pair)
        #expect(without.status == 1)
        #expect(without.standardError.contains("HTTP 403"))
        // New URLs (the query), so that neither is a cache hit or on the failed list.
        let with = try fetch(["fetch", "-j", "1"] + flag + pair.map { $0 + "?again" })
        #expect(with.status == 0, "\(with.standardError)")
        #expect(CacheInspection.files(under: home.path).allSatisfy { !$0.contains("cookie") })
    }

    @Test func progressiveDownloadReportsBytes() throws {
        let result = try fetch(["-v", "fetch", "--progressive", server.url("photo.jpg")])
        #expect(result.status == 0)
        #expect(result.errorLines.contains("imgcache: \(server.url("photo.jpg")): 2.2 kB of 2.2 kB (100%)"), "\(result.standardError)")
        let quiet = try fetch(["-v", "fetch", server.url("logo.png")])
        #expect(!quiet.standardError.contains(" of "))
    }

    @Test func theSameURLAgainIsAnsweredFromMemory() throws {
        let url = server.url("anim.gif")
        let result = try fetch(["--json", "fetch", url, url, url])
        #expect(try result.jsonLines().map { $0["cache"] as? String } == ["none", "memory", "memory"])
        #expect(server.requestCount("anim.gif") == 1)
    }

    @Test func bitsWithoutMeaningAreAcceptedAndSaidSo() throws {
        let result = try fetch(["-v", "fetch", "--options", "continue-in-background,delay-placeholder", server.url("logo.png")])
        #expect(result.status == 0)
        #expect(result.standardError.contains("options without effect in a command-line tool: ContinueInBackground, DelayPlaceholder"))
    }

    @Test(arguments: [["--transform-animated"], ["--options", "transform-animated-image"], ["--options", "0x400"]])
    func transformAnimatedImageKeepsEveryFrame(_ flag: [String]) throws {
        // anim.gif: 3 frames of 32x32, 80 ms each; its thumbnail is an animated GIF of 3 frames.
        let result = try fetch(["--json", "fetch", "--thumbnail", "16x16"] + flag + [server.url("anim.gif")])
        #expect(result.status == 0, "\(result.standardError)")
        let entry = try #require(try result.jsonLines().first)
        #expect(entry["format"] as? String == "gif" && entry["frames"] as? Int == 3)
        let path = try #require(entry["path"] as? String)
        let image = try ImageDecoder.decode([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
        #expect(image.frameCount == 3 && image.width == 16 && image.height == 16)
        #expect(image.delays == [80, 80, 80] && image.loopCount == 0)
    }
}
