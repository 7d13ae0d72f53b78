import Foundation
import Testing

/// Random SIGKILLs across fetch, prefetch, clean and clear running together on
/// one namespace, and a soak of mixed commands. `make test` runs a few rounds;
/// `make soak` runs it for IMGCACHE_SOAK_SECONDS and records the result in
/// Docs/SOAK.md (IMGCACHE_SOAK_REPORT).
@Suite final class SoakTests: LoopbackCacheSuite {
    static let names = ["photo.jpg", "logo.png", "anim.gif", "sticker.webp", "lossless.webp", "apng.png", "alpha.webp"]
    var namespace: String { cacheRoot + "/default" }

    func urls(_ range: Range<Int>) -> [String] {
        range.map { server.url(Self.names[$0 % Self.names.count] + "?n=\($0)") }
    }

    /// The bytes the server sends for a key; nil for a transformed one (checked as a whole image).
    func served(_ key: String) -> Data? {
        guard !key.contains("imgcache-"), let path = key.split(separator: "/").last?.split(separator: "?").first else { return nil }
        return try? Paths.fixture(String(path))
    }

    /// The command lines the soak mixes: downloads, maintenance, reads.
    func mix(_ generator: inout SystemRandomNumberGenerator, list: String) -> [String] {
        let start = Int.random(in: 0..<60, using: &generator)
        switch Int.random(in: 0..<6, using: &generator) {
        case 0: return ["fetch", "-j", "3"] + urls(start..<(start + 25))
        case 1: return ["prefetch", "-j", "4", list]
        case 2: return ["clean", "--max-size", "40k", "--max-age", "1h"]
        case 3: return ["clear"]
        case 4: return ["fetch", "--thumbnail", "16x16"] + urls(start..<(start + 10))
        default: return ["--json", "cache-info"]
        }
    }

    @Test func randomKillsAcrossEveryCommandLeaveEveryEntryWhole() throws {
        let environment = ProcessInfo.processInfo.environment
        let seconds = Double(environment["IMGCACHE_SOAK_SECONDS"] ?? "") ?? 0
        let roundLimit = seconds > 0 ? Int.max : 8
        let deadline = Date().addingTimeInterval(seconds > 0 ? seconds : 60)
        let list = home.appending("urls.txt")
        try urls(0..<90).joined(separator: "\n").write(toFile: list, atomically: false, encoding: .utf8)
        var generator = SystemRandomNumberGenerator()
        var rounds = 0, started = 0, killed = 0, checks = 0
        var problems: [String] = []
        // Rounds go on until at least one process was killed mid-work (a quick one may finish first).
        while rounds < roundLimit || killed == 0, Date() < deadline {
            rounds += 1
            let processes = try (0..<4).map { _ in
                started += 1
                return try ImgCacheProcess.start(["--cache-dir", cacheRoot] + mix(&generator, list: list), home: home.path)
            }
            // Kill one or two at a random point of their work, let the others finish.
            let victims = Set((0..<Int.random(in: 1...2, using: &generator)).map { _ in Int.random(in: 0..<4, using: &generator) })
            usleep(UInt32.random(in: 0..<150_000, using: &generator))
            for index in victims where processes[index].isRunning {
                kill(processes[index].processIdentifier, SIGKILL)
                killed += 1
            }
            for process in processes {
                let limit = Date().addingTimeInterval(30)
                while process.isRunning, Date() < limit { usleep(10_000) }
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
                process.waitUntilExit()
            }
            problems += CacheInspection.problems(inNamespace: namespace, expected: served).map { "round \(rounds): \($0)" }
            checks += 1
        }
        // Afterwards: clean removes what the killed left, and a prefetch completes the set.
        let cleaned = try fetch(["clean", "--max-size", "none", "--max-age", "never"])
        #expect(cleaned.status == 0, "\(cleaned.standardError)")
        #expect(CacheInspection.temporaryFiles(under: cacheRoot).isEmpty)
        let final = try fetch(["-q", "prefetch", list])
        #expect(final.status == 0, "\(final.standardError)")
        problems += CacheInspection.problems(inNamespace: namespace, expected: served)
        #expect(problems.isEmpty, "\(problems.prefix(5))")
        #expect(killed > 0)
        let info = try #require(try fetch(["--json", "cache-info"]).jsonLines().first)
        let stored = CacheInspection.storedFiles(under: namespace).filter { !$0.hasPrefix("failed/") }
        #expect(info["entries"] as? Int == stored.count)

        if let report = environment["IMGCACHE_SOAK_REPORT"] {
            let text = """
                # Soak and kill results

                Last `make soak` (\(ISO8601DateFormatter().string(from: Date()))): \(Int(seconds)) s of rounds of four \
                imgcache processes at once on one namespace, mixing fetch -j 3, prefetch -j 4 of 90 URLs, \
                clean --max-size 40k, clear, fetch --thumbnail and cache-info, one or two of each round \
                killed with SIGKILL at a random moment. After every round every entry on disk was checked \
                (metadata naming its key and size, bytes equal to what the server sends, or for a thumbnail a whole image).

                | Rounds | Processes | SIGKILLs | Checks | Problems found |
                |---:|---:|---:|---:|---:|
                | \(rounds) | \(started) | \(killed) | \(checks) | \(problems.count) |

                Afterwards `clean` left no temporary files, a last prefetch completed every URL, and \
                cache-info's entry count equalled the files on disk.

                """
            try text.write(toFile: report, atomically: false, encoding: .utf8)
        }
    }
}
