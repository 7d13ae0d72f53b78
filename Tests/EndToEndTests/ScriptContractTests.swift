import Foundation
import ImgCacheCore
import Testing

/// What scripts rely on: results on stdout whatever -q says, one line per
/// input in input order, lists read from files and pipes, a failed-URL list
/// that never refuses a cached entry or a different request, file names that
/// tell the truth, and input taken byte for byte. (Signals: `SignalTests`.)
@Suite final class ScriptContractTests: FaultServerSuite {
    let work: TemporaryDirectory

    override init() throws {
        work = try TemporaryDirectory("imgcache-contract")
        try super.init()
    }

    var namespace: String { cacheRoot + "/default" }

    /// Writes `lines` as a list file and returns its path.
    func list(_ lines: [String], name: String = "urls.txt") throws -> String { try work.write(lines: lines, to: name) }

    /// Runs `script` with bash in the work folder, imgcache on PATH and this test's cache.
    func shell(_ script: String) throws -> RunResult {
        let binary = URL(fileURLWithPath: Paths.binary).deletingLastPathComponent().path
        return try ImgCacheProcess.runShell(script, environment: ["PATH": "\(binary):/usr/bin:/bin", "IMGCACHE_DIR": cacheRoot],
                                            home: home.path, workingDirectory: work.path)
    }

    // MARK: - Results on stdout

    @Test func quietSilencesChatterButNeverTheResult() throws {
        let url = server.url("logo.png")
        let quiet = try fetch(["-q", "fetch", url])
        #expect(quiet.status == 0)
        #expect(quiet.lines.count == 1 && quiet.lines[0].hasSuffix(".png"), "\(quiet.output)")
        #expect(quiet.standardError.isEmpty)
        // The recipe people type: the path in a variable.
        let assigned = try shell("logo=$(imgcache -q fetch '\(url)') && test -s \"$logo\" && echo \"$logo\"")
        #expect(assigned.status == 0 && assigned.lines == quiet.lines, "\(assigned.standardError)")
        // cache-info's report is the data asked for; prefetch's summary is chatter.
        #expect(try fetch(["-q", "cache-info"]).output.contains("entries:"))
        let prefetched = try fetch(["-q", "prefetch", try list([url])])
        #expect(prefetched.status == 0 && prefetched.output.isEmpty)
        // xargs -P over fetch -q: one path per URL.
        _ = try list((0..<10).map { server.url("photo.jpg?n=\($0)") })
        let xargs = try shell("xargs -P 4 -n 3 imgcache -q fetch < urls.txt | wc -l")
        #expect(xargs.output.trimmingCharacters(in: .whitespacesAndNewlines) == "10", "\(xargs.standardError)")
    }

    @Test func severalURLsKeepOneLineEachInInputOrderSoPasteLinesUp() throws {
        let urls = [server.url("logo.png"), server.url("status/404"), server.url("photo.jpg"), "not-a-url", server.url("anim.gif")]
        _ = try list(urls)
        let result = try shell("imgcache fetch $(cat urls.txt) | paste urls.txt -")
        let rows = result.lines.map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
        #expect(rows.count == 5, "\(result.output)")
        for row in rows {
            #expect(row.count == 2)
            guard row.count == 2 else { continue }
            if row[0].hasSuffix("404") || row[0] == "not-a-url" {
                #expect(row[1].isEmpty, "\(row)")
            } else {
                // The path on a URL's line is that URL's entry.
                #expect(row[1].contains(MD5.hex(row[0])), "\(row)")
            }
        }
        let paired = try fetch(["fetch", "--with-url"] + urls)
        #expect(paired.status == 1)
        #expect(paired.output.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map { String($0.prefix { $0 != "\t" }) } == urls)
        #expect(paired.output.contains(server.url("status/404") + "\t\n"))
    }

    // MARK: - Lists

    @Test func fetchReadsAListFromAFileOrStandardInputInOrder() throws {
        // The first URL answers last (it stalls until --timeout), yet it is answered first.
        let urls = [faults.baseURL + "/stall", server.url("logo.png"), server.url("photo.jpg"), server.url("logo.png"), "# a comment", "",
                    server.url("sticker.webp")]
        let path = try list(urls)
        let fromFile = try fetch(["fetch", "--timeout", "1", "-i", path, "--with-url"])
        #expect(fromFile.status == 1)
        let expected = urls.filter { !$0.isEmpty && !$0.hasPrefix("#") }
        let lines = fromFile.output.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        #expect(lines.map { String($0.prefix { $0 != "\t" }) } == expected, "\(fromFile.output)")
        #expect(lines.first?.hasSuffix("\t") == true)
        #expect(server.requestCount("logo.png") == 1)

        let fromStandardInput = try shell("imgcache fetch - < urls.txt")
        #expect(fromStandardInput.lines.count == 4, "\(fromStandardInput.output)")
        // '-' is the list, never a URL: nothing is remembered for it.
        #expect(!fromStandardInput.standardError.contains("-: invalid URL"))
        #expect(CacheInspection.failedRecords(inNamespace: namespace).isEmpty)
    }

    @Test func fetchAnswersTheFirstLinesOfAPipeBeforeItEnds() throws {
        let run = try StreamingPrefetch(cacheRoot: cacheRoot, home: home.path, arguments: ["fetch", "-"])
        run.send([server.url("logo.png")])
        let first = try #require(run.firstLine())
        #expect(first.hasSuffix(".png"))
        run.send([server.url("photo.jpg")])
        let result = try run.finish()
        #expect(result.status == 0 && result.lines.count == 2)
    }

    @Test func aLongListIsAnsweredLineForLine() throws {
        // 3,000 lines over 50 URLs: every line answered, in order, each URL downloaded once.
        let urls = (0..<3000).map { server.url("logo.png?n=\($0 % 50)") }
        let result = try fetch(["fetch", "-i", try list(urls), "--with-url"])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.lines.map { String($0.prefix { $0 != "\t" }) } == urls)
        #expect(server.requests.filter { $0.uri.hasPrefix("/logo.png?") }.count == 50)
    }

    // MARK: - The failed-URL list

    @Test func aRefreshThatFindsTheImageGoneReportsItAndKeepsTheEntry() throws {
        let root = try TemporaryDirectory("imgcache-docroot")
        let photo = Paths.fixtures.appendingPathComponent("photo.jpg").path
        try FileManager.default.copyItem(atPath: photo, toPath: root.appending("gone.jpg"))
        let origin = try NginxServer(serving: root.url)
        defer { origin.stop() }
        let url = origin.url("gone.jpg")
        #expect(try fetch(["fetch", url]).status == 0)
        try FileManager.default.removeItem(atPath: root.appending("gone.jpg"))

        let refreshed = try fetch(["fetch", "--refresh", url])
        #expect(refreshed.status == 1 && refreshed.output == "\n")
        #expect(refreshed.standardError.contains("HTTP 404"))
        // The entry stays, and a cached entry is always served: the failed list answers misses only.
        #expect(CacheInspection.storedFiles(under: namespace).count == 1)
        #expect(CacheInspection.failedRecords(inNamespace: namespace).isEmpty)
        #expect(try fetch(["fetch", url]).status == 0)
        #expect(try fetch(["fetch", "--cache-only", url]).status == 0)

        // The image comes back: the next refresh is not blocked.
        try FileManager.default.copyItem(atPath: photo, toPath: root.appending("gone.jpg"))
        let back = try fetch(["--json", "fetch", "--refresh", url])
        #expect(back.status == 0, "\(back.standardError)")
        #expect(try back.jsonLines().first?["cache"] as? String == "refreshed")
        // New bytes or a 304 (the copy may keep the old file's ETag within its second): said either way.
        #expect(try back.jsonLines().first?["modified"] is Bool)
        #expect(origin.requestCount("gone.jpg") == 3)
    }

    @Test func aRefreshThatFailsForAPassingReasonServesTheCachedCopyWithAWarning() throws {
        let url = faults.baseURL + "/image/photo.jpg"
        #expect(try fetch(["fetch", url]).status == 0)
        faults.stop()
        let refreshed = try fetch(["--json", "fetch", "--refresh", url])
        #expect(refreshed.status == 0, "\(refreshed.standardError)")
        let line = try refreshed.jsonLines().first
        #expect(line?["cache"] as? String == "stale")
        #expect((line?["refresh_error"] as? String)?.contains("connection refused") == true)
        #expect(refreshed.errorLines.count == 1 && refreshed.standardError.contains("the cached copy was served"),
                "\(refreshed.standardError)")
        let plain = try fetch(["fetch", "--refresh", url])
        #expect(plain.status == 0 && plain.lines.count == 1 && plain.lines[0].hasPrefix(cacheRoot))
        let served = try fetch(["fetch", "--cache-only", url])
        #expect(served.status == 0 && served.lines.count == 1)
    }

    /// An origin that is down for a whole refresh: after three refused connections its host is
    /// given up for the run, and the entries still to refresh are served from the cache as the
    /// first three were, stale, never failed.
    @Test func aRefreshDuringAnOutageServesEveryCachedEntry() throws {
        let urls = (0..<6).map { faults.baseURL + "/image/photo.jpg?n=\($0)" }
        #expect(try fetch(["fetch"] + urls).status == 0)
        faults.stop()
        let refreshed = try fetch(["--json", "fetch", "--refresh", "-j", "1"] + urls)
        #expect(refreshed.status == 0, "\(refreshed.standardError)")
        let caches = try refreshed.jsonLines().map { $0["cache"] as? String }
        #expect(caches == Array(repeating: "stale", count: 6), "\(caches)")
        #expect(try refreshed.jsonLines().allSatisfy { ($0["refresh_error"] as? String) != nil })
    }

    @Test func anAuthorisationFailureDoesNotBlockARequestWithCredentialsHeadersOrCookies() throws {
        let url = faults.baseURL + "/need-auth/photo.jpg"
        let anonymous = try fetch(["fetch", url])
        #expect(anonymous.status == 1 && anonymous.standardError.contains("HTTP 401"))
        // Remembered for plain requests only.
        #expect(try fetch(["fetch", url]).standardError.contains("--retry-failed"))
        #expect(faults.requestCount(path: "/need-auth/photo.jpg") == 1)
        let withCredentials = try fetch(["fetch", "-u", "user:secret", url])
        #expect(withCredentials.status == 0, "\(withCredentials.standardError)")
        #expect(faults.requestCount(path: "/need-auth/photo.jpg") == 2)

        // A refusal of a request with a header is not remembered at all.
        let cookie = faults.baseURL + "/need-cookie/logo.png"
        #expect(try fetch(["fetch", "-H", "Cookie: session=wrong", cookie]).status == 1)
        let rightCookie = try fetch(["fetch", "-H", "Cookie: session=s3cr3t", cookie])
        #expect(rightCookie.status == 0, "\(rightCookie.standardError)")
    }

    @Test func anExpiredSignatureDoesNotBlockTheFreshlySignedURL() throws {
        let expired = faults.baseURL + "/signed/photo.jpg?sig=expired", fresh = faults.baseURL + "/signed/photo.jpg?sig=fresh"
        let first = try fetch(["fetch", "--key-filter", "strip-query", expired])
        #expect(first.status == 1 && first.standardError.contains("HTTP 403"))
        let second = try fetch(["fetch", "--key-filter", "strip-query", fresh])
        #expect(second.status == 0, "\(second.standardError)")
        // And now the entry answers the expired one too: the key has no signature.
        #expect(try fetch(["fetch", "--key-filter", "strip-query", "--cache-only", expired]).status == 0)
    }

    @Test func aSizeLimitFailureBlocksOnlyRunsWithALimitNoLarger() throws {
        let url = server.url("photo.jpg")
        let small = try fetch(["fetch", "--max-size", "1k", url])
        #expect(small.status == 1 && small.standardError.contains("limit"))
        #expect(try fetch(["fetch", "--max-size", "1000", url]).standardError.contains("--retry-failed"))
        #expect(server.requestCount("photo.jpg") == 1)
        let unlimited = try fetch(["fetch", url])
        #expect(unlimited.status == 0, "\(unlimited.standardError)")
        #expect(server.requestCount("photo.jpg") == 2)
    }

    @Test func linesThatAreNoURLNeverReachTheFailedList() throws {
        let path = work.appending("notes.txt")
        try "Shopping list\nmilk\nftp://example.test/a.png\nhttp://\n".write(toFile: path, atomically: false, encoding: .utf8)
        let result = try fetch(["prefetch", path])
        #expect(result.status == 1)
        #expect(result.errorLines.count == 4, "\(result.standardError)")
        #expect(CacheInspection.failedRecords(inNamespace: namespace).isEmpty)
    }

    // MARK: - File names

    @Test func storedNamesTakeTheExtensionOfTheBytes() throws {
        let root = try TemporaryDirectory("imgcache-docroot")
        for (source, name) in [("photo.jpg", "really-a-jpeg.png"), ("logo.png", "no-extension"), ("anim.gif", "anim.gif"), ("photo.jpg", "photo.jpg")] {
            try FileManager.default.copyItem(atPath: Paths.fixtures.appendingPathComponent(source).path, toPath: root.appending(name))
        }
        let origin = try NginxServer(serving: root.url)
        defer { origin.stop() }
        func stored(_ arguments: [String]) throws -> String {
            let result = try fetch(["fetch"] + arguments)
            #expect(result.status == 0, "\(arguments): \(result.standardError)")
            return result.lines.first ?? ""
        }
        #expect(try stored([origin.url("really-a-jpeg.png")]).hasSuffix(".jpg"))
        #expect(try stored([origin.url("no-extension")]).hasSuffix(".png"))
        // Transforms without --format: the format they wrote.
        #expect(try stored(["--thumbnail", "16x16", origin.url("photo.jpg")]).hasSuffix(".jpg"))
        #expect(try stored(["--thumbnail", "16x16", origin.url("anim.gif")]).hasSuffix(".gif"))
        #expect(try stored(["--scale-down=1000", origin.url("photo.jpg")]).hasSuffix(".jpg"))
        #expect(try stored(["--thumbnail", "16x16", "--format", "webp", origin.url("anim.gif")]).hasSuffix(".webp"))
        // A second fetch finds each under its name (a hit: one request each).
        #expect(try stored([origin.url("really-a-jpeg.png")]).hasSuffix(".jpg"))
        #expect(origin.requestCount("really-a-jpeg.png") == 1)
    }

    @Test func anOutputNameThatNamesAnotherFormatIsRefusedOrConverted() throws {
        let gif = work.appending("t.gif")
        #expect(try fetch(["fetch", "--thumbnail", "16x16", "-o", gif, server.url("anim.gif")]).status == 0)
        #expect(ImageFormat.sniff([UInt8](try Data(contentsOf: URL(fileURLWithPath: gif)))) == .gif)

        let webp = work.appending("t.webp")
        #expect(try fetch(["fetch", "--thumbnail", "64x64", "-o", webp, server.url("anim.gif")]).status == 0)
        #expect(ImageFormat.sniff([UInt8](try Data(contentsOf: URL(fileURLWithPath: webp)))) == .webp)

        let png = work.appending("photo.png")
        let mismatch = try fetch(["fetch", "-o", png, server.url("photo.jpg")])
        #expect(mismatch.status == 74, "\(mismatch.standardError)")
        #expect(mismatch.standardError.contains("the image is JPEG but the name says PNG"))
        let pngWritten = FileManager.default.fileExists(atPath: png)
        #expect(!pngWritten)
        let converted = try fetch(["fetch", "--format", "png", "-o", png, server.url("photo.jpg")])
        #expect(converted.status == 0, "\(converted.standardError)")
        #expect(ImageFormat.sniff([UInt8](try Data(contentsOf: URL(fileURLWithPath: png)))) == .png)
    }

    @Test func entriesNamedByEarlierVersionsAreStillFound() throws {
        // Earlier versions named an entry for the URL's extension: x.jpeg, not x.jpg.
        let root = try TemporaryDirectory("imgcache-docroot")
        try FileManager.default.copyItem(atPath: Paths.fixtures.appendingPathComponent("photo.jpg").path, toPath: root.appending("photo.jpeg"))
        let origin = try NginxServer(serving: root.url)
        defer { origin.stop() }
        let url = origin.url("photo.jpeg")
        let stored = try #require(try fetch(["fetch", url]).lines.first)
        let legacy = String(stored.dropLast(".jpg".count)) + ".jpeg"
        let metadata = try #require(CacheInspection.metadata(ofImage: stored))
        let name = String(stored.split(separator: "/").last!)
        try FileManager.default.moveItem(atPath: stored, toPath: legacy)
        try FileSystem.setAttribute("user.imgcache", of: legacy,
                                    to: Array(metadata.replacing("\nfile \(name)\n", with: "\nfile \(String(legacy.split(separator: "/").last!))\n").utf8))
        let hit = try fetch(["--json", "fetch", url])
        #expect(try hit.jsonLines().first?["cache"] as? String == "disk", "\(hit.output)")
        #expect(try hit.jsonLines().first?["path"] as? String == legacy)
        #expect(origin.requestCount("photo.jpeg") == 1)
    }

    // MARK: - Input hygiene

    @Test func aByteOrderMarkBeforeTheFirstURLIsSkipped() throws {
        let path = work.appending("bom.txt")
        try Data([0xEF, 0xBB, 0xBF] + Array((server.url("logo.png") + "\r\n" + server.url("photo.jpg") + "\r\n").utf8))
            .write(to: URL(fileURLWithPath: path))
        let result = try fetch(["prefetch", path])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(CacheInspection.failedRecords(inNamespace: namespace).isEmpty)
    }

    @Test func bytesThatAreNotUTF8AreSentAsTheyAre() throws {
        // A file named caf\xE9.png (Latin-1), asked for from a list and from the command line.
        let root = try TemporaryDirectory("imgcache-docroot")
        let name: [UInt8] = Array("caf".utf8) + [0xE9] + Array(".png".utf8)
        let source = try Paths.fixture("logo.png")
        var target = Array(root.path.utf8) + [UInt8(ascii: "/")] + name + [0]
        let file = target.withUnsafeMutableBytes { open($0.baseAddress!.assumingMemoryBound(to: CChar.self), O_WRONLY | O_CREAT, 0o644) }
        #expect(file >= 0)
        _ = source.withUnsafeBytes { write(file, $0.baseAddress, $0.count) }
        close(file)
        let origin = try NginxServer(serving: root.url)
        defer { origin.stop() }
        let listPath = work.appending("latin1.txt")
        try Data(Array(origin.url("").utf8) + name + [0x0A]).write(to: URL(fileURLWithPath: listPath))
        let fromList = try fetch(["fetch", "-i", listPath])
        #expect(fromList.status == 0, "\(fromList.standardError)")
        #expect(origin.requests.last?.uri == "/caf%E9.png")
        let fromArguments = try shell("imgcache fetch --no-cache-read $'\(origin.url("caf"))\\xe9.png'")
        #expect(fromArguments.status == 0, "\(fromArguments.standardError)")
        #expect(origin.requests.count == 2 && origin.requests.last?.status == 200)
    }

    @Test func queryParametersKeptByTheKeyFilterAreInCanonicalOrderAndFragmentsAreIgnored() throws {
        let a = server.url("logo.png?w=1&h=2&sig=a"), b = server.url("logo.png?h=2&w=1&sig=b")
        let first = try fetch(["fetch", "--key-filter", "keep-query=w,h", a])
        let second = try fetch(["--json", "fetch", "--key-filter", "keep-query=w,h", b])
        #expect(try second.jsonLines().first?["cache"] as? String == "disk")
        #expect(second.output.contains(first.lines.first ?? "-"))
        let fragments = try fetch(["fetch", server.url("photo.jpg#one"), server.url("photo.jpg#two"), server.url("photo.jpg")])
        #expect(Set(fragments.lines).count == 1, "\(fragments.output)")
        #expect(server.requestCount("photo.jpg") == 1)
    }

    // MARK: - Smaller ones

    @Test func aPasswordIsBlankedInTheProcessArguments() throws {
        let outputs = try TemporaryDirectory("imgcache-cmdline")
        let process = try ImgCacheProcess.startCapturing(
            ["--cache-dir", cacheRoot, "fetch", "--timeout", "5", "-u", "user:s3cr3t-pass", faults.baseURL + "/stall"],
            home: home.path, outputs: outputs)
        defer { kill(process.processIdentifier, SIGKILL) }
        // Wait (bounded) until the request is in flight: start-up is over by then.
        for _ in 0..<500 where faults.requests.isEmpty { usleep(10_000) }
        let arguments = try String(contentsOfFile: "/proc/\(process.processIdentifier)/cmdline", encoding: .isoLatin1)
        #expect(!faults.requests.isEmpty)
        #expect(!arguments.contains("s3cr3t"), "\(arguments)")
        #expect(arguments.contains("-u\u{0}*"))
    }

    @Test func passwordsInURLsAreBlankedInTheProcessArguments() throws {
        let outputs = try TemporaryDirectory("imgcache-cmdline")
        let host = faults.baseURL.replacingOccurrences(of: "http://", with: "")
        let process = try ImgCacheProcess.startCapturing(
            ["--cache-dir", cacheRoot, "fetch", "--timeout", "5", "--remote", "http://store:remote-s3cr3t@\(host)/stall-store/|read-only",
             "http://me:origin-s3cr3t@\(host)/stall"], home: home.path, outputs: outputs)
        defer { kill(process.processIdentifier, SIGKILL) }
        for _ in 0..<500 where faults.requests.isEmpty { usleep(10_000) }
        let arguments = try String(contentsOfFile: "/proc/\(process.processIdentifier)/cmdline", encoding: .isoLatin1)
        #expect(!faults.requests.isEmpty)
        #expect(!arguments.contains("s3cr3t"), "\(arguments)")
        // Only the passwords: the rest of each URL still says what the process is doing.
        #expect(arguments.contains("http://store:*************@\(host)/stall-store/|read-only"), "\(arguments)")
        #expect(arguments.contains("http://me:*************@\(host)/stall"), "\(arguments)")
    }

    @Test func anUnwritableCacheIsSaidOnceForAWholeList() throws {
        let blocked = home.appending("blocked")
        FileManager.default.createFile(atPath: blocked, contents: Data())
        let urls = ["logo.png", "photo.jpg", "anim.gif", "sticker.webp"].map { server.url($0) }
        let prefetched = try fetch(["--cache-dir", blocked, "prefetch", try list(urls)])
        #expect(prefetched.status == 73)
        #expect(prefetched.errorLines.filter { $0.contains("cache not writable") }.count == 1, "\(prefetched.standardError)")
        let fetched = try fetch(["--cache-dir", blocked, "fetch"] + urls)
        #expect(fetched.status == 73)
        #expect(fetched.errorLines.filter { $0.contains("cache not writable") }.count == 1, "\(fetched.standardError)")
        #expect(fetched.output == "\n\n\n\n")
    }

    @Test func withoutHOMETheHomeFolderComesFromThePasswordDatabase() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Paths.binary)
        process.arguments = ["--json", "cache-info"]
        process.environment = ["PATH": "/usr/bin:/bin"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let home = try #require(getpwuid(getuid())).pointee.pw_dir.map { String(cString: $0) } ?? "?"
        #expect(text.contains("\"path\":\"\(home)/.cache/imgcache/default\""), "\(text)")
    }

    @Test func messagesCountInTheSingularAndSayWhenANamespaceDoesNotExist() throws {
        #expect(try fetch(["fetch", server.url("logo.png")]).status == 0)
        let cleaned = try fetch(["clean"])
        #expect(cleaned.output.contains("kept 1 entry,"), "\(cleaned.output)")
        #expect(try fetch(["prefetch", try list([server.url("logo.png")])]).output.hasPrefix("1 URL: "))
        let typo = try fetch(["-n", "defualt", "clear"])
        #expect(typo.status == 0)
        #expect(typo.standardError.contains("namespace 'defualt' does not exist"), "\(typo.standardError)")
        #expect(typo.output.contains("removed 0 entries"))
    }
}
