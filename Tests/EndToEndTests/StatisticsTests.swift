import Foundation
import Testing

/// The statistics of fetch and prefetch (`cache-info`, `cache-info --zero`).
@Suite final class StatisticsTests: LoopbackCacheSuite {
    var statsPath: String { cacheRoot + "/default/stats" }

    func counts() throws -> [String: Any] {
        try #require(try fetch(["--json", "cache-info"]).jsonLines().first)
    }

    @Test func hitsMissesDownloadsAndFailuresAreCounted() throws {
        #expect(try fetch(["fetch", server.url("photo.jpg"), server.url("logo.png"), server.url("status/404")]).status == 1)
        #expect(try fetch(["fetch", server.url("photo.jpg"), server.url("photo.jpg")]).status == 0)
        let list = home.appending("urls.txt")
        try [server.url("logo.png"), server.url("anim.gif"), server.url("status/404")].joined(separator: "\n")
            .write(toFile: list, atomically: false, encoding: .utf8)
        #expect(try fetch(["prefetch", list]).status == 1)
        let object = try counts()
        JSONContract.expect(object, matches: "cache-info")
        // Hits: photo twice, logo once; downloads: photo, logo, anim; failures: the 404, then its blacklisted repeat.
        #expect(object["hits"] as? Int == 3 && object["downloads"] as? Int == 3 && object["failures"] as? Int == 2)
        #expect(object["misses"] as? Int == 5 && object["remote_hits"] as? Int == 0)
        let bytes = try ["photo.jpg", "logo.png", "anim.gif"].map { try Paths.fixture($0).count }.reduce(0, +)
        #expect(object["downloaded_bytes"] as? Int == bytes)
        #expect(object["statistics_since"] is NSNull)
        let text = try fetch(["cache-info"]).output
        #expect(text.contains("hits:         3 (37.5 %)") && text.contains("3 downloaded"), "\(text)")

        // One line per process, not per URL.
        let lines = try String(contentsOfFile: statsPath, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 3)

        let zeroed = try fetch(["--json", "cache-info", "--zero"])
        let after = try #require(try zeroed.jsonLines().first)
        #expect(after["hits"] as? Int == 0 && after["misses"] as? Int == 0 && after["statistics_since"] is String)
        #expect(try fetch(["fetch", server.url("photo.jpg")]).status == 0)
        #expect(try counts()["hits"] as? Int == 1)
    }

    @Test func concurrentProcessesAndCleansNeverLoseACount() throws {
        #expect(try fetch(["fetch", server.url("photo.jpg"), server.url("logo.png")]).status == 0)
        // Enough earlier runs for clean to compact the file while the processes append.
        let earlier = String(repeating: "run hits=1 remote=0 downloads=0 bytes=0 failures=0\n", count: 200)
        let handle = try #require(FileHandle(forWritingAtPath: statsPath))
        handle.seekToEndOfFile()
        handle.write(Data(earlier.utf8))
        try handle.close()
        var processes: [Process] = []
        for round in 0..<12 {
            processes.append(try ImgCacheProcess.start(["--cache-dir", cacheRoot, "fetch", server.url("photo.jpg"), server.url("logo.png")],
                                                       home: home.path))
            if round % 4 == 0 { processes.append(try ImgCacheProcess.start(["--cache-dir", cacheRoot, "clean"], home: home.path)) }
        }
        for process in processes { process.waitUntilExit() }
        let object = try counts()
        #expect(object["hits"] as? Int == 200 + 24, "\(object)")
        #expect(object["downloads"] as? Int == 2)
        // Compacted once over 4 KiB: far fewer lines than the 214 runs wrote.
        #expect(try fetch(["clean"]).status == 0)
        let lines = try String(contentsOfFile: statsPath, encoding: .utf8).split(separator: "\n")
        let total = try counts()["hits"] as? Int
        #expect(lines.count < 20 && total == 224, "\(lines.count) lines")
    }
}
