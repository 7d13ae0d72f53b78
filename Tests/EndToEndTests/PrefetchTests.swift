import Foundation
import Testing

/// `imgcache prefetch` as scripts run it: lists with every kind of line, a
/// streaming pipe, signals, closed pipes, concurrent runs on one namespace.
@Suite final class PrefetchTests: FaultServerSuite {
    let work: TemporaryDirectory

    override init() throws {
        work = try TemporaryDirectory("imgcache-prefetch")
        try super.init()
    }

    var namespace: String { cacheRoot + "/default" }

    /// Writes `lines` as a list file and returns its path.
    func list(_ lines: [String], name: String = "urls.txt") throws -> String { try work.write(lines: lines, to: name) }

    /// The bytes the servers send for a URL whose last path component is a fixture.
    func served(_ url: String) -> Data? {
        guard let name = url.split(separator: "?").first?.split(separator: "/").last else { return nil }
        return try? Paths.fixture(String(name))
    }

    func summary(_ result: RunResult) throws -> [String: Any] {
        try #require(try result.jsonLines().last { $0["summary"] as? Bool == true })
    }

    @Test func aMixedListIsCountedExactlyAndFailuresAreRememberedOnlyWhenLasting() throws {
        let good = server.url("photo.jpg"), cached = server.url("logo.png")
        #expect(try fetch(["fetch", cached]).status == 0)
        let lines = ["# images for the gallery", good, "", good, cached, server.url("status/404"),
                     faults.baseURL + "/status/503", server.url("page.html"), "not a url"]
        let path = try list(lines)

        let first = try fetch(["--json", "prefetch", path])
        #expect(first.status == 1, "\(first.standardError)")
        let answers = try first.jsonLines().filter { $0["summary"] == nil }
        #expect(answers.count == 6)
        #expect(Set(answers.compactMap { $0["url"] as? String }) == Set([good, cached, server.url("status/404"),
                                                                            faults.baseURL + "/status/503", server.url("page.html"), "not a url"]))
        let counts = try summary(first)
        #expect(counts["urls"] as? Int == 6 && counts["repeats"] as? Int == 1)
        #expect(counts["downloaded"] as? Int == 1 && counts["cached"] as? Int == 1)
        #expect(counts["failed"] as? Int == 4 && counts["blacklisted"] as? Int == 0)
        #expect(counts["complete"] as? Bool == false)
        #expect(server.requestCount("photo.jpg") == 1)

        // The 404 and the HTML page are remembered; the 503 is tried again, and
        // the malformed line, which needs no request, fails again without filling the list.
        let second = try fetch(["--json", "prefetch", path])
        let again = try summary(second)
        #expect(again["downloaded"] as? Int == 0 && again["cached"] as? Int == 2)
        #expect(again["failed"] as? Int == 2 && again["blacklisted"] as? Int == 2)
        #expect(faults.requestCount(path: "/status/503") == 2)
        #expect(server.requestCount("status/404") == 1 && server.requestCount("page.html") == 1)
        #expect(try second.jsonLines().filter { $0["blacklisted"] as? Bool == true }.count == 2)
        #expect(CacheInspection.failedRecords(inNamespace: namespace).count == 2)
        #expect(CacheInspection.problems(inNamespace: namespace, expected: served).isEmpty)

        // The human summary says the same in one line.
        let human = try fetch(["prefetch", path])
        #expect(human.lines.last?.hasPrefix("6 URLs: 0 downloaded, 2 already cached, 2 failed, 2 blacklisted; 1 repeated line skipped") == true,
                "\(human.output)")
        #expect(human.errorLines.filter { $0.contains("--retry-failed") }.count == 2)
    }

    @Test func aListThatIsAllCachedExitsZero() throws {
        let urls = ["photo.jpg", "logo.png", "anim.gif", "sticker.webp"].map { server.url($0) }
        let path = try list(urls + urls)
        let cold = try fetch(["-q", "prefetch", path])
        #expect(cold.status == 0, "\(cold.standardError)")
        #expect(cold.output.isEmpty && cold.standardError.isEmpty)
        let warm = try fetch(["--json", "prefetch", path])
        #expect(warm.status == 0)
        #expect(try summary(warm)["cached"] as? Int == 4)
        #expect(server.requests.count == 4)
    }

    @Test func workStartsBeforeTheListEnds() throws {
        let run = try StreamingPrefetch(cacheRoot: cacheRoot, home: home.path)
        run.send([server.url("photo.jpg")])
        // The first answer arrives while the list is still open.
        let firstLine = run.firstLine() ?? ""
        #expect(firstLine.contains("\"cache\":\"none\""), "\(firstLine)")
        run.send([server.url("logo.png")])
        let result = try run.finish()
        #expect(result.status == 0)
        #expect(result.lines.count == 3)
    }

    @Test func aCacheFolderDeletedDuringTheRunIsMadeAgain() throws {
        let run = try StreamingPrefetch(cacheRoot: cacheRoot, home: home.path)
        run.send([server.url("photo.jpg")])
        #expect(run.firstLine() != nil)
        // The first image is stored; now the whole cache goes, while the run goes on.
        try FileManager.default.removeItem(atPath: cacheRoot)
        run.send(["logo.png", "anim.gif", "sticker.webp"].map { server.url($0) })
        let result = try run.finish()
        #expect(result.status == 0, "\(result.lines)")
        #expect(CacheInspection.storedFiles(under: namespace).filter { !$0.hasPrefix("failed/") }.count == 3)
        #expect(FileManager.default.fileExists(atPath: namespace + "/lock"))
        #expect(CacheInspection.problems(inNamespace: namespace, expected: served).isEmpty)
    }

    @Test(arguments: [(SIGINT, Int32(130), "SIGINT"), (SIGTERM, Int32(143), "SIGTERM")])
    func aSignalStopsTheRunRemovesTemporaryFilesAndPrintsTheSummary(signal: Int32, status: Int32, name: String) throws {
        // Two good images, and three endless bodies; at -j 256 a transfer keeps
        // 256 KiB in memory, so each endless one soon writes a temporary file.
        let stalls = (0..<3).map { faults.baseURL + "/endless?n=\($0)" }
        let path = try list([server.url("logo.png"), server.url("anim.gif")] + stalls)
        let outputs = try TemporaryDirectory("imgcache-signal")
        let process = try ImgCacheProcess.startCapturing(["--cache-dir", cacheRoot, "--json", "prefetch", "-j", "256", path],
                                                         home: home.path, outputs: outputs)
        // Wait (bounded) until the two good images are stored and the three
        // endless transfers hold temporary files.
        let deadline = Date().addingTimeInterval(10)
        func stored() -> Int {
            CacheInspection.storedFiles(under: namespace).filter { $0.split(separator: "/").last?.hasPrefix("tmp.") == false }.count
        }
        while Date() < deadline, stored() < 2 || CacheInspection.temporaryFiles(under: cacheRoot).count < 3 || faults.requests.count < 3 {
            usleep(5_000)
        }
        #expect(CacheInspection.temporaryFiles(under: cacheRoot).count >= 3)
        kill(process.processIdentifier, signal)
        let result = try ImgCacheProcess.result(of: process, outputs: outputs)
        #expect(result.status == status, "\(result.standardError)")
        #expect(result.standardError.contains("interrupted by \(name)"))
        #expect(CacheInspection.temporaryFiles(under: cacheRoot).isEmpty)
        #expect(CacheInspection.problems(inNamespace: namespace, expected: served).isEmpty)
        let counts = try summary(result)
        #expect(counts["downloaded"] as? Int == 2, "\(result.output)")
        #expect(counts["interrupted"] as? Int == 3)
        #expect(counts["complete"] as? Bool == false)
        // Nothing interrupted was remembered as failed.
        #expect(CacheInspection.failedRecords(inNamespace: namespace).isEmpty)
    }

    @Test func aClosedOutputPipeEndsQuietlyWithoutLeftovers() throws {
        // The second URL stalls until --timeout; by then the reader has gone.
        let path = try list([server.url("logo.png"), faults.baseURL + "/stall", server.url("photo.jpg")])
        let outputPipe = Pipe()
        let errors = try TemporaryDirectory("imgcache-pipe")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Paths.binary)
        process.arguments = ["--cache-dir", cacheRoot, "--json", "prefetch", "-j", "1", "--timeout", "1", path]
        process.environment = ["PATH": "/usr/bin:/bin", "HOME": home.path]
        process.standardOutput = outputPipe
        FileManager.default.createFile(atPath: errors.appending("stderr"), contents: nil)
        process.standardError = FileHandle(forWritingAtPath: errors.appending("stderr"))
        process.standardInput = FileHandle.nullDevice
        try process.run()
        var received = Data()
        while !received.contains(UInt8(ascii: "\n")) {
            let chunk = outputPipe.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            received.append(chunk)
        }
        try outputPipe.fileHandleForReading.close()
        let deadline = Date().addingTimeInterval(20)
        while process.isRunning, Date() < deadline { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        #expect(process.terminationStatus == 141)
        let standardError = try String(contentsOfFile: errors.appending("stderr"), encoding: .utf8)
        #expect(!standardError.contains("Broken pipe"), "\(standardError)")
        #expect(CacheInspection.temporaryFiles(under: cacheRoot).isEmpty)
    }

    @Test func fourConcurrentPrefetchesOfOverlappingListsStoreEachImageWhole() throws {
        let names = ["photo.jpg", "logo.png", "anim.gif", "sticker.webp", "lossless.webp"]
        let all = (0..<40).map { server.url(names[$0 % names.count] + "?n=\($0)") }
        var generator = SystemRandomNumberGenerator()
        let outputs = try (0..<4).map { _ in try TemporaryDirectory("imgcache-concurrent") }
        let processes = try (0..<4).map { index in
            let lines = Array(all[(index * 5)..<(index * 5 + 25)]).shuffled(using: &generator)
            return try ImgCacheProcess.startCapturing(["--cache-dir", cacheRoot, "--json", "prefetch", "-j", "4",
                                                       try list(lines, name: "list\(index).txt")],
                                                      home: home.path, outputs: outputs[index])
        }
        for (process, output) in zip(processes, outputs) {
            let result = try ImgCacheProcess.result(of: process, outputs: output)
            #expect(result.status == 0, "\(result.standardError)")
            #expect(try summary(result)["urls"] as? Int == 25)
        }
        let covered = Set((0..<4).flatMap { (($0 * 5)..<($0 * 5 + 25)).map { $0 } })
        #expect(CacheInspection.storedFiles(under: namespace).count == covered.count)
        #expect(CacheInspection.problems(inNamespace: namespace, expected: served).isEmpty)
        #expect(CacheInspection.temporaryFiles(under: cacheRoot).isEmpty)
        // Each URL reached the server at least once and at most once per process that listed it.
        for index in covered {
            let uri = "/" + names[index % names.count] + "?n=\(index)"
            let requests = server.requests.filter { $0.uri == uri }.count
            let listedBy = (0..<4).filter { ((($0 * 5)..<($0 * 5 + 25))).contains(index) }.count
            #expect((1...listedBy).contains(requests), "\(uri): \(requests) requests")
        }
    }

    @Test func aProgressBarOnlyOnATerminal() throws {
        let path = try list(["photo.jpg", "logo.png", "anim.gif"].map { server.url($0) })
        let plain = try fetch(["prefetch", path])
        #expect(!plain.standardError.contains("\u{1B}[K"))
        #expect(plain.lines.last?.hasPrefix("3 URLs: 3 downloaded") == true)

        // Under script(1), stderr is a terminal: the bar shows done/total and clears itself.
        let terminal = try TemporaryDirectory("imgcache-tty")
        let command = [Paths.binary, "--cache-dir", cacheRoot + "-tty", "prefetch", path].joined(separator: " ")
        let script = Process()
        script.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        script.arguments = ["-qec", command, "/dev/null"]
        script.environment = ["PATH": "/usr/bin:/bin", "HOME": home.path, "TERM": "xterm"]
        FileManager.default.createFile(atPath: terminal.appending("out"), contents: nil)
        script.standardOutput = FileHandle(forWritingAtPath: terminal.appending("out"))
        script.standardInput = FileHandle.nullDevice
        try script.run()
        script.waitUntilExit()
        let screen = try String(contentsOfFile: terminal.appending("out"), encoding: .utf8)
        #expect(script.terminationStatus == 0, "\(screen)")
        #expect(screen.contains("\r\u{1B}[K"))
        #expect(screen.contains("/3"), "\(screen)")
        #expect(screen.contains("3 URLs: 3 downloaded"))

        let quiet = try TemporaryDirectory("imgcache-tty-quiet")
        let quietScript = Process()
        quietScript.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        quietScript.arguments = ["-qec", command.replacingOccurrences(of: " prefetch ", with: " -q prefetch "), "/dev/null"]
        quietScript.environment = script.environment
        FileManager.default.createFile(atPath: quiet.appending("out"), contents: nil)
        quietScript.standardOutput = FileHandle(forWritingAtPath: quiet.appending("out"))
        quietScript.standardInput = FileHandle.nullDevice
        try quietScript.run()
        quietScript.waitUntilExit()
        #expect(try String(contentsOfFile: quiet.appending("out"), encoding: .utf8).isEmpty)
    }

    @Test func aListThatCannotBeReadIsExit66() throws {
        let missing = try fetch(["prefetch", work.appending("nope.txt")])
        #expect(missing.status == 66)
        #expect(missing.errorLines.first?.hasPrefix("imgcache: error: cannot read the list of URLs:") == true, "\(missing.standardError)")
        #expect(missing.standardError.contains("No such file or directory"))
        let directory = try fetch(["prefetch", work.path])
        #expect(directory.status == 66)
        #expect(directory.standardError.contains("is a directory"))
        #expect(CacheInspection.storedFiles(under: cacheRoot).isEmpty)
    }
}
