import Foundation
import Testing

/// `imgcache fetch` against nginx: downloads, hits, output, layout.
@Suite final class FetchTests: LoopbackCacheSuite {
    @Test func aMissDownloadsStoresTheExactBytesAndPrintsThePath() throws {
        let url = server.url("logo.png")
        let result = try fetch(["fetch", url])
        #expect(result.status == 0)
        let digest = try CacheInspection.md5(url)
        let expectedPath = "\(cacheRoot)/default/\(digest.prefix(2))/\(digest).png"
        #expect(result.lines == [expectedPath])
        #expect(try Data(contentsOf: URL(fileURLWithPath: expectedPath)) == Paths.fixture("logo.png"))
        #expect(CacheInspection.files(under: cacheRoot) == ["default/CACHEDIR.TAG", "default/\(digest.prefix(2))/\(digest).png",
                                                         "default/\(digest.prefix(2))/urls", "default/lock", "default/stats"].sorted())
        #expect(CacheInspection.metadata(ofImage: expectedPath)?.contains("\nkey \(url)\n") == true)
    }

    @Test func aSecondFetchIsAHitThatNeedsNoServer() throws {
        let url = server.url("photo.jpg")
        let first = try fetch(["--json", "fetch", url])
        server.stop()
        let second = try fetch(["--json", "fetch", url])
        #expect(second.status == 0, "\(second.standardError)")
        let firstObject = try #require(first.jsonLines().first)
        let secondObject = try #require(second.jsonLines().first)
        #expect(firstObject["cache"] as? String == "none")
        #expect(secondObject["cache"] as? String == "disk")
        #expect(secondObject["path"] as? String == firstObject["path"] as? String)
    }

    @Test func aHitDoesNotReachTheServer() throws {
        let url = server.url("anim.gif")
        _ = try fetch(["fetch", url])
        _ = try fetch(["fetch", url])
        _ = try fetch(["fetch", url])
        #expect(server.requestCount("anim.gif") == 1)
    }

    @Test(arguments: ["photo.jpg", "logo.png", "anim.gif", "sticker.webp", "lossless.webp"])
    func jsonReportsFormatAndSizeOfEachFormat(name: String) throws {
        let expected = try Self.expectations()[name]
        let result = try fetch(["--json", "fetch", server.url(name)])
        #expect(result.status == 0, "\(result.standardError)")
        let object = try #require(result.jsonLines().first)
        #expect(object["format"] as? String == expected?.format)
        #expect(object["width"] as? Int == expected?.width)
        #expect(object["height"] as? Int == expected?.height)
        #expect(object["bytes"] as? Int == (try Paths.fixture(name).count))
        #expect(object["url"] as? String == server.url(name))
    }

    @Test func metadataRecordsTheServersValidatorsAndType() throws {
        let url = server.url("sticker.webp")
        let result = try fetch(["--json", "fetch", url])
        let object = try #require(result.jsonLines().first)
        let path = try #require(object["path"] as? String)
        let metadata = try #require(CacheInspection.metadata(ofImage: path))
        let etag = try #require(object["etag"] as? String)
        #expect(etag.hasPrefix("\"") && etag.hasSuffix("\""))
        #expect(metadata.contains("\nkey \(url)\n"))
        #expect(metadata.contains("\netag \(etag)\n"))
        #expect(metadata.contains("\ncontent-type image/webp\n"))
        #expect(metadata.contains("\nformat webp\n"))
        #expect(object["last_modified"] as? String != nil)
    }

    @Test func theRequestCarriesImgcachesUserAgentAndAccept() throws {
        _ = try fetch(["fetch", server.url("logo.png")])
        let request = try #require(server.requests.first)
        #expect(request.status == 200)
        #expect(request.userAgent == "imgcache/0.1.0")
        #expect(request.accept == "image/avif,image/jxl,image/webp,image/jpeg,image/png,image/gif,image/heic,image/heif,image/tiff,image/bmp,image/x-icon,image/svg+xml,image/*;q=0.8,*/*;q=0.5")
    }

    @Test func outputToAFileWritesTheImage() throws {
        let destination = home.appending("copy.jpg")
        let result = try fetch(["fetch", "-o", destination, server.url("photo.jpg")])
        #expect(result.status == 0)
        #expect(result.output.isEmpty)
        #expect(try Data(contentsOf: URL(fileURLWithPath: destination)) == Paths.fixture("photo.jpg"))
    }

    @Test func outputDashWritesTheImageToStandardOutput() throws {
        let result = try fetch(["fetch", "--output=-", server.url("anim.gif")])
        #expect(result.status == 0)
        #expect(result.standardOutput == (try Paths.fixture("anim.gif")))
    }

    @Test func aRedirectIsFollowedAndStoredUnderTheRequestedURL() throws {
        let url = server.url("moved/logo.png")
        let result = try fetch(["fetch", url])
        #expect(result.status == 0)
        let digest = try CacheInspection.md5(url)
        #expect(result.lines == ["\(cacheRoot)/default/\(digest.prefix(2))/\(digest).png"])
        #expect(server.requestCount("moved/logo.png") == 1 && server.requestCount("logo.png") == 1)
    }

    @Test func severalURLsGiveOneLineEachAndAFailureDoesNotStopTheOthers() throws {
        let result = try fetch(["--json", "fetch", server.url("logo.png"), server.url("status/404"), server.url("photo.jpg")])
        #expect(result.status == 1)
        let objects = try result.jsonLines()
        #expect(objects.count == 3)
        #expect(objects[0]["cache"] as? String == "none")
        #expect((objects[1]["error"] as? String)?.contains("HTTP 404") == true)
        #expect(objects[2]["format"] as? String == "jpeg")
    }

    @Test func oneImageAskedForManyTimesInARunIsDownloadedOnce() throws {
        let photo = server.url("photo.jpg")
        // The same URL, and with a fragment (never sent): one download answers them all.
        let given = try fetch(["--json", "fetch", photo, photo + "#b", server.url("logo.png"), photo])
        #expect(given.status == 0, "\(given.standardError)")
        #expect(try given.jsonLines().count == 4)
        #expect(server.requestCount("photo.jpg") == 1)
        // A list read as it is answered (fetch -i) and a prefetch, each into an empty cache.
        let list = home.appending("list")
        try Array(repeating: server.url("logo.png"), count: 40).joined(separator: "\n").write(toFile: list, atomically: false, encoding: .utf8)
        for command in [["fetch", "-i", list], ["prefetch", list]] {
            #expect(try fetch(["clear"]).status == 0)
            let before = server.requestCount("logo.png")
            let result = try fetch(command)
            #expect(result.status == 0, "\(result.standardError)")
            #expect(server.requestCount("logo.png") == before + 1, "\(command)")
        }
    }

    @Test func aNamespaceIsAFolderOfItsOwn() throws {
        let url = server.url("logo.png")
        let result = try fetch(["-n", "thumbs", "fetch", url])
        #expect(result.status == 0)
        #expect(result.lines.first?.hasPrefix(cacheRoot + "/thumbs/") == true)
        let other = try fetch(["--json", "fetch", "--namespace=other", url])
        #expect(try other.jsonLines().first?["cache"] as? String == "none")
    }

    @Test func aTruncatedEntryIsAMissAndIsFetchedAgain() throws {
        let url = server.url("photo.jpg")
        let path = try #require(try fetch(["fetch", url]).lines.first)
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.truncate(atOffset: 100)
        try handle.close()
        let again = try fetch(["--json", "fetch", url])
        #expect(try again.jsonLines().first?["cache"] as? String == "none")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Paths.fixture("photo.jpg"))
    }

    @Test func anEntryWhoseMetadataIsMissingIsAMiss() throws {
        let url = server.url("logo.png")
        let path = try #require(try fetch(["fetch", url]).lines.first)
        try CacheInspection.dropAttributes(path)
        let again = try fetch(["-v", "--json", "fetch", url])
        #expect(try again.jsonLines().first?["cache"] as? String == "none")
        #expect(again.standardError.contains("damaged entry \(path): its metadata is missing; removed, fetching again"))
        #expect(CacheInspection.metadata(ofImage: path) != nil)
    }

    @Test func aReaderThatClosesStandardOutputEndsTheRunQuietlyWith141() throws {
        let url = server.url("logo.png")
        _ = try fetch(["fetch", url])
        // 4000 hits print some 300 KB of paths: far more than a pipe holds, so the
        // writes after `head` exits must fail with EPIPE.
        let script = """
            urls=(); for i in $(seq 4000); do urls+=('\(url)'); done
            '\(Paths.binary)' --cache-dir '\(cacheRoot)' fetch "${urls[@]}" | head -c 1 >/dev/null; echo ${PIPESTATUS[0]}
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", script]
        process.environment = ["PATH": "/usr/bin:/bin", "HOME": home.path]
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let status = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let errorText = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(status == "141\n")
        #expect(errorText.isEmpty, "\(errorText)")
    }

    @Test func aHitMarksTheEntryUsed() throws {
        let url = server.url("logo.png")
        let path = try #require(try fetch(["fetch", url]).lines.first)
        let old = Date(timeIntervalSince1970: 1_000_000_000)
        try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: path)
        _ = try fetch(["fetch", url])
        let touched = try #require(try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date)
        #expect(touched > old.addingTimeInterval(86_400 * 365))
    }

    struct Expectation { let format: String; let width: Int; let height: Int }

    /// Tests/Fixtures/images/expected.tsv, written by Pillow.
    static func expectations() throws -> [String: Expectation] {
        let text = try String(contentsOf: Paths.fixtures.appendingPathComponent("expected.tsv"), encoding: .utf8)
        var table: [String: Expectation] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let fields = line.split(separator: "\t").map(String.init)
            table[fields[0]] = Expectation(format: fields[1], width: Int(fields[2])!, height: Int(fields[3])!)
        }
        return table
    }
}
