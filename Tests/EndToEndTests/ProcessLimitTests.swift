import Foundation
import Glibc
import Testing

/// A limit of the process (`ulimit -u`: threads; `ulimit -n`: descriptors) is said as what it is,
/// with its value, and ends the run 71; it is never a missing library, a refusing host (none is
/// given up) or a cache that cannot be written.
@Suite final class ProcessLimitTests: LoopbackCacheSuite {
    /// Runs imgcache under `limit` (a ulimit flag and value). As root (whom RLIMIT_NPROC does not
    /// bind), it runs as a uid no other process has, so only its own threads count.
    func runLimited(_ limit: String, _ arguments: [String]) throws -> RunResult {
        let quoted = (["--cache-dir", cacheRoot] + arguments).map { "'\($0)'" }.joined(separator: " ")
        var prefix = ""
        if getuid() == 0 {
            for path in [home.path, cacheRoot] { chmod(path, 0o777) }
            prefix = "setpriv --reuid=65533 --regid=65533 --clear-groups -- "
        }
        return try ImgCacheProcess.runShell("\(prefix)bash -c 'ulimit \(limit); exec \"$BIN\" \"$@\"' imgcache \(quoted)",
                                            environment: ["BIN": Paths.binary, "PATH": "/usr/bin:/bin"],
                                            home: home.path, workingDirectory: "/")
    }

    func list(_ count: Int) throws -> String {
        let path = home.appending("urls.txt")
        let names = ["photo.jpg", "logo.png", "anim.gif", "sticker.webp"]
        try (0..<count).map { server.url("\(names[$0 % names.count])?n=\($0)") }.joined(separator: "\n")
            .write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, 0o644)
        return path
    }

    @Test func outOfDescriptorsIsNamedGivesUpNoHostAndExits71() throws {
        guard getuid() == 0 else { return }
        let urls = try list(60)
        var limited = 0
        for descriptors in [10, 14, 18, 24] {
            let result = try runLimited("-n \(descriptors)", ["-q", "prefetch", urls])
            if result.status == 71 { limited += 1 }
            #expect(result.status == 71 || result.status == 0, "ulimit -n \(descriptors): \(result.status) \(result.standardError)")
            for line in result.errorLines {
                #expect(line.contains("Too many open files (the limit of open files, ulimit -n \(descriptors))")
                        || line.contains("too many open files (ulimit -n)"), "ulimit -n \(descriptors): \(line)")
            }
            #expect(!result.standardError.contains("given up") && !result.standardError.contains("install the"),
                    "ulimit -n \(descriptors): \(result.standardError)")
            // What was stored is whole; nothing else was remembered as failed.
            #expect(CacheInspection.failedRecords(inNamespace: cacheRoot + "/default").isEmpty, "ulimit -n \(descriptors)")
            _ = try fetch(["clear"])
        }
        #expect(limited > 0, "no run met the limit")
    }

    /// More transfers asked for than the descriptors have room for: as many run as fit, and every
    /// URL is stored (none fails for want of a descriptor another transfer holds).
    @Test func transfersBeyondTheDescriptorLimitAreLoweredToFitAndEveryURLIsStored() throws {
        guard getuid() == 0 else { return }
        let urls = try list(120)
        for descriptors in [24, 26, 32, 48] {
            let result = try runLimited("-n \(descriptors)", ["-v", "--json", "prefetch", "-j", "16", urls])
            #expect(result.status == 0, "ulimit -n \(descriptors): \(result.status) \(result.standardError.suffix(600))")
            #expect(result.standardError.contains("16 transfers at once lowered to"), "ulimit -n \(descriptors)")
            let summary = try result.jsonLines().last
            #expect(summary?["downloaded"] as? Int == 120, "ulimit -n \(descriptors): \(String(describing: summary))")
            _ = try fetch(["clear"])
        }
    }

    /// Under `ulimit -u 1` no thread can start at all; with a little more room a run may fit (how
    /// many threads it needs depends on the machine's cores), so each run either works or says why.
    @Test func noThreadToStartIsNamedAndExits71() throws {
        guard getuid() == 0 else { return }
        let urls = try list(8)
        for threads in 1...3 {
            let result = try runLimited("-u \(threads)", ["-q", "prefetch", urls])
            #expect(result.status == 71 || (threads > 1 && result.status == 0),
                    "ulimit -u \(threads): \(result.status) \(result.standardError)")
            if result.status == 71 {
                #expect(result.standardError.contains("cannot start a thread: Resource temporarily unavailable (the limit of processes and threads, ulimit -u \(threads))"),
                        "\(result.standardError)")
            } else {
                #expect(result.standardError.isEmpty, "ulimit -u \(threads): \(result.standardError)")
            }
            #expect(!result.standardError.contains("cannot read the list"), "\(result.standardError)")
        }
        // With room for its threads the same run works.
        #expect(try runLimited("-u 64", ["-q", "prefetch", urls]).status == 0)
    }

    /// A list that reaches every shard keeps few descriptors open (each shard's log is not held
    /// open for the whole run): 600 URLs under ulimit -n 64, all downloaded.
    @Test func aListOverEveryShardNeedsFewDescriptors() throws {
        guard getuid() == 0 else { return }
        let urls = try list(600)
        let result = try runLimited("-n 64", ["--json", "prefetch", urls])
        #expect(result.status == 0, "\(result.standardError)")
        let summary = try result.jsonLines().last
        #expect(summary?["downloaded"] as? Int == 600, "\(String(describing: summary))")
        // Under the docs' own example, ulimit -n 16, the logs kept open are fewer still: every URL is stored.
        _ = try fetch(["clear"])
        let low = try runLimited("-n 16", ["--json", "prefetch", "-j", "1", urls])
        #expect(low.status == 0, "\(low.standardError)")
        #expect(try low.jsonLines().last?["downloaded"] as? Int == 600, "\(low.standardError)")
    }
}
