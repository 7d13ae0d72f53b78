import Foundation
import Testing
import ImgCacheCore

/// The cache under crashes and concurrent processes: many imgcache processes
/// on one namespace, some killed at random moments, with clean and clear
/// running meanwhile. Whatever happens, every entry on disk is whole.
@Suite final class CacheSafetyTests: LoopbackCacheSuite {
    static let names = ["photo.jpg", "logo.png", "anim.gif", "sticker.webp", "lossless.webp"]

    /// Distinct URLs for the same few fixtures (the query makes each its own entry).
    func urls(_ range: Range<Int>) -> [String] {
        range.map { server.url(Self.names[$0 % Self.names.count] + "?n=\($0)") }
    }

    /// The bytes nginx serves for a URL of `urls`.
    func served(_ url: String) -> Data? {
        guard let path = url.split(separator: "/").last?.split(separator: "?").first else { return nil }
        return try? Paths.fixture(String(path))
    }

    var namespace: String { cacheRoot + "/default" }

    @Test func killingAStoringProcessAtRandomMomentsNeverLeavesATornEntry() throws {
        let list = urls(0..<60)
        var generator = SystemRandomNumberGenerator()
        var readerChecks = 0, killedMidway = 0
        for round in 0..<12 {
            let process = try ImgCacheProcess.start(["--cache-dir", cacheRoot, "fetch", "-j", "2"] + list, home: home.path)
            // Kill it once the cache holds a random number of new files (or it ends first).
            let target = CacheInspection.files(under: cacheRoot).count + Int.random(in: 0..<30, using: &generator)
            let deadline = Date().addingTimeInterval(10)
            while process.isRunning, Date() < deadline, CacheInspection.files(under: cacheRoot).count < target {
                // A reader meanwhile never finds a torn or mismatched entry.
                #expect(CacheInspection.problems(inNamespace: namespace, expected: served).isEmpty, "round \(round)")
                readerChecks += 1
            }
            if process.isRunning { killedMidway += 1 }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            #expect(CacheInspection.problems(inNamespace: namespace, expected: served).isEmpty, "round \(round)")
            // Every other round starts empty; the others store over existing entries.
            if round % 2 == 1 { _ = try fetch(["clear"]) }
        }
        #expect(readerChecks > 0)
        #expect(killedMidway > 0)
        // The killed processes' temporary files are recognised and removed by clean.
        let cleaned = try fetch(["--json", "clean"])
        #expect(cleaned.status == 0, "\(cleaned.standardError)")
        #expect(CacheInspection.temporaryFiles(under: cacheRoot).isEmpty)
        // And a last fetch completes the set: every URL is served from whole entries.
        let final = try fetch(["--json", "fetch"] + list)
        #expect(final.status == 0, "\(final.standardError)")
        #expect(CacheInspection.problems(inNamespace: namespace, expected: served).isEmpty)
        #expect(CacheInspection.storedFiles(under: cacheRoot).count == list.count)
    }

    @Test func concurrentWritersCleansAndAClearKeepTheCacheConsistent() throws {
        // Four writers over overlapping halves of 80 URLs, a clean loop that trims
        // hard, and a clear in the middle.
        let all = urls(0..<80)
        let writers = try (0..<4).map { index in
            try ImgCacheProcess.start(["--cache-dir", cacheRoot, "fetch", "-j", "3"] + Array(all[(index * 15)..<(index * 15 + 35)]), home: home.path)
        }
        var cleans = 0
        for round in 0..<6 {
            let result = try fetch(["--json", "clean", "--max-size", "20k"])
            #expect(result.status == 0, "\(result.standardError)")
            cleans += 1
            if round == 2 { #expect(try fetch(["clear"]).status == 0) }
        }
        for writer in writers {
            writer.waitUntilExit()
            #expect(writer.terminationStatus == 0)
        }
        #expect(cleans == 6)
        #expect(CacheInspection.problems(inNamespace: namespace, expected: served).isEmpty)
        #expect(CacheInspection.temporaryFiles(under: cacheRoot).isEmpty)
        // cache-info's totals are what is on disk.
        let info = try #require(try fetch(["--json", "cache-info"]).jsonLines().first)
        let stored = CacheInspection.storedFiles(under: namespace)
        let bytes = try stored.reduce(0) { $0 + (try Data(contentsOf: URL(fileURLWithPath: namespace + "/" + $1)).count) }
        #expect(info["entries"] as? Int == stored.count)
        #expect(info["bytes"] as? Int == bytes)
    }

    @Test func aSecondCleanNoticesTheFirstAndExitsAtOnce() throws {
        _ = try fetch(["fetch", server.url("logo.png")])
        // Another process holds the cleaner's byte of the lock file, as a running clean does.
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        holder.arguments = ["-c", """
            import fcntl, sys
            f = open(sys.argv[1], 'r+')
            fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 256)
            print('held', flush=True)
            sys.stdin.read()
            """, namespace + "/lock"]
        let input = Pipe(), output = Pipe()
        holder.standardInput = input
        holder.standardOutput = output
        try holder.run()
        defer {
            try? input.fileHandleForWriting.close()
            holder.waitUntilExit()
        }
        #expect(String(decoding: output.fileHandleForReading.availableData, as: UTF8.self).hasPrefix("held"))
        let second = try fetch(["clean", "--max-age", "1s"])
        #expect(second.status == 0)
        #expect(second.errorLines == ["imgcache: note: another clean of namespace 'default' is running; nothing done"])
        let json = try fetch(["--json", "clean"])
        #expect(try json.jsonLines().first?["skipped"] as? String == "another clean is running")
        JSONContract.expect(try json.jsonLines().first, matches: "clean: skipped")
        #expect(CacheInspection.storedFiles(under: cacheRoot).count == 1)
    }

    /// A tmpfs of `size` at `name` under the home folder, unmounted by the returned closure.
    func smallDisk(_ name: String, size: String) throws -> (path: String, unmount: () -> Void) {
        let mountPoint = home.appending(name)
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        try #require(try mount(["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", mountPoint]) == 0)
        return (mountPoint, { _ = try? self.run("/bin/umount", [mountPoint]) })
    }

    /// `mount ARGUMENTS`' exit status.
    func mount(_ arguments: [String]) throws -> Int32 { try run("/bin/mount", arguments) }

    private func run(_ tool: String, _ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Fills the file system of `folder` but `leaving` bytes (about: in 4 KiB blocks).
    func fill(_ folder: String, leaving: Int = 0) {
        FileManager.default.createFile(atPath: folder + "/filler", contents: nil)
        guard let filler = FileHandle(forWritingAtPath: folder + "/filler") else { return }
        var info = statvfs()
        statvfs(folder, &info)
        let free = Int(info.f_bavail) * Int(info.f_frsize)
        let block = Data(repeating: 0, count: 4096)
        for _ in 0..<max(0, (free - leaving) / 4096) { do { try filler.write(contentsOf: block) } catch { break } }
        try? filler.close()
    }

    @Test(.enabled(if: getuid() == 0, "mounting a small tmpfs needs root"))
    func aFullDiskGivesAClearErrorAndKeepsTheEntries() throws {
        let (mountPoint, unmount) = try smallDisk("small", size: "512k")
        defer { unmount() }
        let root = mountPoint + "/cache"
        let kept = try ImgCacheProcess.run(["--cache-dir", root, "fetch", server.url("logo.png"), server.url("photo.jpg")], home: home.path)
        try #require(kept.status == 0, "\(kept.standardError)")
        // Fill what is left.
        fill(mountPoint)

        let full = try ImgCacheProcess.run(["--cache-dir", root, "fetch", server.url("anim.gif"), server.url("sticker.webp")], home: home.path)
        #expect(full.status == 73)
        #expect(full.standardError.contains("No space left on device"), "\(full.standardError)")
        #expect(CacheInspection.temporaryFiles(under: root).isEmpty)
        // -o still gets its image (from a file outside the cache), and the run says the cache was full.
        let output = home.appending("delivered.gif")
        let delivered = try ImgCacheProcess.run(["--cache-dir", root, "fetch", "-o", output, server.url("anim.gif")], home: home.path)
        #expect(delivered.status == 0 && delivered.standardError.contains("not stored: the cache's disk is full"), "\(delivered.standardError)")
        #expect(FileManager.default.contents(atPath: output) == (try Paths.fixture("anim.gif")))
        #expect(CacheInspection.temporaryFiles(under: root).isEmpty)
        // So does a thumbnail or a conversion of an image cached already: made, delivered, not stored.
        for (arguments, name) in [(["--thumbnail", "16x"], "thumbnail.webp"), (["--format", "png"], "converted.png")] {
            let made = home.appending(name)
            let result = try ImgCacheProcess.run(["--cache-dir", root, "fetch"] + arguments + ["-o", made, server.url("photo.jpg")], home: home.path)
            #expect(result.status == 0 && result.standardError.contains("not stored: the cache's disk is full"), "\(name): \(result.standardError)")
            #expect((try? Data(contentsOf: URL(fileURLWithPath: made)).count) ?? 0 > 0, "\(name)")
            #expect(CacheInspection.temporaryFiles(under: root).isEmpty, "\(name)")
        }
        server.stop()
        let again = try ImgCacheProcess.run(["--cache-dir", root, "--json", "fetch", server.url("logo.png"), server.url("photo.jpg")], home: home.path)
        #expect(again.status == 0)
        #expect(try again.jsonLines().map { $0["cache"] as? String } == ["disk", "disk"])
        #expect(CacheInspection.problems(inNamespace: root + "/default", expected: served).isEmpty)
    }

    /// A cache on a read-only file system: `-o FILE` still gets the image (a miss downloaded, a
    /// conversion of a cached one made), nothing is stored, and the run says why; exit 0.
    @Test(.enabled(if: getuid() == 0, "mounting a small tmpfs needs root"))
    func aReadOnlyCacheStillDeliversToTheOutput() throws {
        let (mountPoint, unmount) = try smallDisk("read-only", size: "4m")
        defer { unmount() }
        let root = mountPoint + "/cache"
        #expect(try ImgCacheProcess.run(["--cache-dir", root, "fetch", server.url("photo.jpg")], home: home.path).status == 0)
        try #require(try mount(["-o", "remount,ro", mountPoint]) == 0)
        let output = home.appending("from-read-only.gif")
        let missed = try ImgCacheProcess.run(["--cache-dir", root, "fetch", "-o", output, server.url("anim.gif")], home: home.path)
        #expect(missed.status == 0 && missed.standardError.contains("cannot be written (Read-only file system): nothing is stored"),
                "\(missed.standardError)")
        #expect(FileManager.default.contents(atPath: output) == (try Paths.fixture("anim.gif")))
        let thumbnail = home.appending("thumbnail.png")
        let converted = try ImgCacheProcess.run(["--cache-dir", root, "fetch", "--thumbnail", "16x", "-o", thumbnail, server.url("photo.jpg")],
                                                home: home.path)
        #expect(converted.status == 0, "\(converted.standardError)")
        #expect(try ImageDecoder.decode([UInt8](try Data(contentsOf: URL(fileURLWithPath: thumbnail)))).width == 16)
        // Without -o the run says the cache cannot be written, as before.
        #expect(try ImgCacheProcess.run(["--cache-dir", root, "fetch", server.url("logo.png")], home: home.path).status == 73)
    }

    /// A disk that fills up stops the downloads: the images that fit are stored, the rest of the
    /// list is not tried (each download would be thrown away), counted as such, exit 73.
    @Test(.enabled(if: getuid() == 0, "mounting a small tmpfs needs root"))
    func aFullDiskStopsTheDownloadsAndLeavesTheRestNotTried() throws {
        let (mountPoint, unmount) = try smallDisk("filling", size: "1m")
        defer { unmount() }
        let root = mountPoint + "/cache"
        #expect(try ImgCacheProcess.run(["--cache-dir", root, "fetch", server.url("logo.png")], home: home.path).status == 0)
        fill(mountPoint, leaving: 48 << 10)
        let list = home.appending("many.txt")
        try (0..<200).map { server.url("photo.jpg?n=\($0)") }.joined(separator: "\n").write(toFile: list, atomically: false, encoding: .utf8)
        func photoRequests() -> Int { server.requests.filter { $0.uri.hasPrefix("/photo.jpg") }.count }
        let before = photoRequests()
        let result = try ImgCacheProcess.run(["--cache-dir", root, "--json", "prefetch", list], home: home.path)
        #expect(result.status == 73, "\(result.standardError)")
        let summary = try #require(try result.jsonLines().last)
        let downloaded = summary["downloaded"] as? Int ?? -1, notTried = summary["not_tried"] as? Int ?? -1
        let requests = photoRequests() - before
        #expect(downloaded >= 1 && notTried > 100, "\(summary)")
        #expect((summary["failed"] as? Int ?? 0) + downloaded + notTried == 200, "\(summary)")
        // Downloads stop at the first full write: those stored, and those under way then (at most the
        // run's read-ahead of locked downloads, four times -j plus four), no more of the 200.
        #expect(requests >= downloaded && requests <= downloaded + 4 * 6 + 4, "\(requests) requests for \(downloaded) stored")
        #expect(result.errorLines.filter { $0.hasPrefix("imgcache: error:") && $0.contains("not tried") }.isEmpty, "said once, in the summary")
        #expect(result.standardError.contains("the cache's disk is full"), "\(result.standardError)")
        #expect(CacheInspection.temporaryFiles(under: root).isEmpty)
        #expect(CacheInspection.problems(inNamespace: root + "/default", expected: served).isEmpty)
    }
}
