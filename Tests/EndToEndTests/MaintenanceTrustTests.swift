import Foundation
import Testing

/// What a nightly `clean` from cron relies on: values that cannot trap,
/// settings that cannot be read stopping a clean rather than letting it guess.
@Suite final class MaintenanceTrustTests: LoopbackCacheSuite {
    var namespace: String { cacheRoot + "/default" }
    var settingsPath: String { namespace + "/settings" }

    /// Three entries, last used ten days ago: a 30-day setting keeps them, the 7-day default would not.
    /// Three entries made ten days old. With `distinctShards`, the URLs carry a query that puts
    /// each in a shard of its own (the server's port changes every run, and with it the shards).
    func agedEntries(distinctShards: Bool = false) throws -> [String] {
        var result = try fetch(["fetch", server.url("logo.png"), server.url("photo.jpg"), server.url("anim.gif")])
        for round in 1..<50 where distinctShards && Set(result.lines.map { URL(fileURLWithPath: $0).deletingLastPathComponent().path }).count < 3 {
            // A fresh cache each round: only this round's entries are in it.
            try FileManager.default.removeItem(atPath: cacheRoot)
            result = try fetch(["fetch"] + ["logo.png", "photo.jpg", "anim.gif"].map { server.url($0) + "?round=\(round)" })
        }
        #expect(result.status == 0, "\(result.standardError)")
        let tenDaysAgo = Date(timeIntervalSinceNow: -10 * 86_400)
        for path in result.lines { try FileManager.default.setAttributes([.modificationDate: tenDaysAgo], ofItemAtPath: path) }
        return result.lines
    }

    func writeSettings(_ text: String) throws {
        try text.write(toFile: settingsPath, atomically: false, encoding: .utf8)
    }

    /// Runs imgcache as an unprivileged user when this process is root (root reads any file).
    func fetchUnprivileged(_ arguments: [String]) throws -> RunResult {
        guard getuid() == 0 else { return try fetch(arguments) }
        for path in [home.path, cacheRoot] { chmod(path, 0o755) }
        let quoted = (["--cache-dir", cacheRoot] + arguments).map { "'\($0)'" }.joined(separator: " ")
        _ = try ImgCacheProcess.runShell("chown -R 65534:65534 '\(cacheRoot)'", environment: ["PATH": "/usr/bin:/bin"],
                                         home: home.path, workingDirectory: home.path)
        return try ImgCacheProcess.runShell("setpriv --reuid=65534 --regid=65534 --clear-groups -- \"$BIN\" \(quoted)",
                                            environment: ["BIN": Paths.binary, "PATH": "/usr/bin:/bin"],
                                            home: home.path, workingDirectory: "/")
    }

    // MARK: - No value traps

    @Test func durationsAndSizesTooLargeAreUsageErrors() throws {
        for arguments in [["config", "--max-age", "9999999999999999999"], ["clean", "--max-age", "99999999999999999999w"],
                          ["config", "--failed-ttl", "101y"], ["clean", "--max-size", "99999999999999999999T"],
                          ["fetch", "--timeout", "1e9", server.url("logo.png")]] {
            let result = try fetch(arguments)
            #expect(result.status == 64, "\(arguments): \(result.status) \(result.standardError)")
        }
        #expect(!FileManager.default.fileExists(atPath: settingsPath))
        // Past any duration: the option's own range is what is said.
        let huge = try fetch(["fetch", "--timeout", "99999999999999999999", server.url("logo.png")])
        #expect(huge.status == 64 && huge.standardError.contains("expected between 1ms and 1d"), "\(huge.standardError)")
    }

    @Test(arguments: ["max-age inf", "max-age 1e300", "max-age nan", "max-age 99999999999999999999", "failed-ttl -inf",
                      "max-size 99999999999999999999999", "umask 99"])
    func aSettingsFileWithAValueNoCommandLineTakesTrapsNothing(line: String) throws {
        _ = try agedEntries()
        try writeSettings("imgcache-settings 1\n\(line)\n")
        let info = try fetch(["--json", "cache-info"])
        #expect(info.status == 0, "\(line): \(info.standardError)")
        #expect(info.standardError.contains("settings file \(settingsPath) has a bad line 2"), "\(line): \(info.standardError)")
        #expect(try info.jsonLines().count == 1)
        let config = try fetch(["--json", "config"])
        #expect(config.status == 78, "\(line): \(config.status) \(config.standardError)")
        let clean = try fetch(["--json", "clean"])
        #expect(clean.status == 78, "\(line): \(clean.status) \(clean.standardError)")
        #expect(CacheInspection.storedFiles(under: namespace).filter { $0.hasSuffix(".png") || $0.hasSuffix(".jpg") || $0.hasSuffix(".gif") }.count == 3)
        // A fetch says it too, and goes on.
        let fetched = try fetch(["fetch", server.url("logo.png")])
        #expect(fetched.status == 0 && fetched.standardError.contains("ignored"), "\(fetched.standardError)")
    }

    @Test func statisticsThatOverflowAreTheLargestCountNotATrap() throws {
        _ = try agedEntries()
        let big = "run hits=9223372036854775807 remote=0 downloads=9223372036854775807 bytes=9223372036854775807 failures=0\n"
        try (big + big + "zeroed inf\nrun hits=x\n").write(toFile: namespace + "/stats", atomically: false, encoding: .utf8)
        let info = try fetch(["--json", "cache-info"])
        #expect(info.status == 0, "\(info.standardError)")
        #expect(try info.jsonLines().first?["hits"] as? Int == Int.max)
        #expect(try fetch(["cache-info"]).status == 0)
        #expect(try fetch(["clean"]).status == 0)
    }

    // MARK: - Settings that cannot be read stop a clean

    @Test(arguments: [
        // Forms the command line refuses are refused in the file too.
        ("imgcache-settings 1\nmax-age 0x10\n", "max-age '0x10'"),
        ("imgcache-settings 1\nmax-age 1e-300\n", "max-age '1e-300'"),
        ("imgcache-settings 1\nmax-age 4e6\n", "max-age '4e6'"),
        ("imgcache-settings 1\nmax-age +4000000\n", "max-age '+4000000'"),
        ("imgcache-settings 1\nmax-size +1000\n", "max-size '+1000'"),
        ("imgcache-settings 1\nmax-size 9223372036854775807\n", "max-size '9223372036854775807'"),
        ("imgcache-settings 1\nfailed-ttl 0x10\n", "failed-ttl '0x10'"),
        // A misspelt limit is not an absent one, and a second value is not a choice.
        ("imgcache-settings 1\nmax_age 2592000\n", "unknown setting 'max_age'"),
        ("imgcache-settings 1\nmax-age 2592000\n" + String(repeating: "x", count: 100_000) + "\n",
         "has a bad line 3: not 'NAME VALUE' but '" + String(repeating: "x", count: 40) + "…'"),
        ("imgcache-settings 1\nmax-age never\nmax-age 60\n", "max-age is set again"),
        ("imgcache-settings 0\nmax-age 2592000\n", "a version line this imgcache does not understand"),
        ("imgcache-settings 1.0\nmax-age 2592000\n", "a version line this imgcache does not understand"),
        ("garbage\nmax-age 2592000\n", "is not an imgcache settings file"),
        ("imgcache-settings 2\nmax-age 2592000\n", "was written by a later version"),
        ("imgcache-settings 1\nmax-age 2592000\nmax-size -5\n", "max-size '-5'"),
        ("imgcache-settings 1\nmax-age 2592000\nmax-size 0\n", "max-size '0'"),
        ("imgcache-settings 1\nmax-age 0\n", "max-age '0'"),
        ("imgcache-settings 1\nmax-age nan\n", "max-age 'nan'"),
    ])
    func settingsThatCannotBeUsedStopTheCleanAndKeepEveryEntry(text: String, said: String) throws {
        let entries = try agedEntries()
        try writeSettings(text)
        let clean = try fetch(["clean"])
        #expect(clean.status == 78, "\(clean.status) \(clean.standardError)")
        #expect(clean.standardError.contains(settingsPath) && clean.standardError.contains(said), "\(clean.standardError)")
        #expect(clean.standardError.contains("not cleaned"))
        #expect(entries.allSatisfy { FileManager.default.fileExists(atPath: $0) })
        // config shows the problem, not defaults.
        let config = try fetch(["config"])
        #expect(config.status == 78 && config.output.isEmpty && config.standardError.contains(said), "\(config.standardError)")
        // Setting it again mends the file.
        #expect(try fetch(["config", "--max-age", "30d"]).status == 0)
        let again = try fetch(["clean"])
        #expect(again.status == 0, "\(again.standardError)")
        #expect(entries.allSatisfy { FileManager.default.fileExists(atPath: $0) })
    }

    @Test func anUnreadableSettingsFileStopsTheCleanToo() throws {
        let entries = try agedEntries()
        try writeSettings("imgcache-settings 1\nmax-age 2592000\n")
        #expect(chmod(settingsPath, 0) == 0)
        let clean = try fetchUnprivileged(["clean"])
        #expect(clean.status == 78, "\(clean.status) \(clean.standardError)")
        #expect(clean.standardError.contains("cannot be read: Permission denied"), "\(clean.standardError)")
        #expect(entries.allSatisfy { FileManager.default.fileExists(atPath: $0) })
        let config = try fetchUnprivileged(["config"])
        #expect(config.status == 78, "\(config.standardError)")
    }

    // MARK: - Small but real

    @Test func aFullStandardOutputIsAnErrorForEveryCommand() throws {
        _ = try agedEntries()
        // A full device of its own, as /dev/full is (made only where the test may: as root).
        let full = home.appending("full")
        guard mknod(full, S_IFCHR | 0o666, dev_t(1 << 8 | 7)) == 0 else { return }
        for arguments in [["list"], ["remove", "--dry-run", server.url("logo.png")], ["cache-info"], ["config"], ["clean", "--dry-run", "--max-age", "1d"],
                          ["--version"]] {
            let quoted = (["--cache-dir", cacheRoot] + arguments).map { "'\($0)'" }.joined(separator: " ")
            let result = try ImgCacheProcess.runShell("\"$BIN\" \(quoted) > '\(full)'; echo $? >&2",
                                                      environment: ["BIN": Paths.binary, "PATH": "/usr/bin:/bin"],
                                                      home: home.path, workingDirectory: home.path)
            #expect(result.errorLines.last == "74", "\(arguments): \(result.standardError)")
        }
    }

    @Test func smallThings() throws {
        // A root that is a file is said, not taken for an empty cache.
        let file = home.appending("not-a-folder")
        FileManager.default.createFile(atPath: file, contents: Data("x".utf8))
        let clean = try ImgCacheProcess.run(["--cache-dir", file, "clean"], home: home.path)
        #expect(clean.status == 73 && clean.standardError.contains("is not a folder"), "\(clean.standardError)")
        // One remembered setting forgotten.
        #expect(try fetch(["config", "--max-age", "30d", "--max-size", "2G"]).status == 0)
        #expect(try fetch(["config", "--unset", "max-age"]).status == 0)
        let shown = try #require(try fetch(["--json", "config"]).jsonLines().first)
        #expect(shown["max_age_source"] as? String == "default" && shown["max_size_source"] as? String == "remembered")
        #expect(try fetch(["config", "--unset", "color"]).status == 64)
        // What ccache calls stats is cache-info here.
        let stats = try fetch(["stats"])
        #expect(stats.status == 64 && stats.standardError.contains("did you mean 'cache-info'"), "\(stats.standardError)")
        // A damaged failed record is no failure.
        try FileManager.default.createDirectory(atPath: namespace + "/failed", withIntermediateDirectories: true)
        try "garbage".write(toFile: namespace + "/failed/0123456789abcdef0123456789abcdef", atomically: false, encoding: .utf8)
        #expect(try fetch(["--json", "cache-info"]).jsonLines().first?["failed_urls"] as? Int == 0)
    }

    // MARK: - Dry runs say what they do

    @Test func aDryRunListsEachFileItWouldRemoveEvenWithQuiet() throws {
        let entries = try agedEntries()
        let dry = try fetch(["-q", "clean", "--dry-run", "--max-age", "1d"])
        #expect(dry.status == 0)
        #expect(dry.lines.count == 3, "\(dry.output)")
        for path in entries { #expect(dry.lines.contains { $0.hasPrefix("would remove \(path) (") && $0.contains("unused for ") }) }
        #expect(dry.lines.contains { $0.hasSuffix("  " + server.url("logo.png")) })
        #expect(entries.allSatisfy { FileManager.default.fileExists(atPath: $0) })
        let json = try fetch(["--json", "clean", "--dry-run", "--max-age", "1d"]).jsonLines()
        #expect(json.count == 4 && json.dropLast().allSatisfy { $0["reason"] as? String == "expired" })
    }

    // MARK: - One bad shard is not a bad namespace

    @Test func anUnreadableShardIsReportedAndTheRestIsDone() throws {
        let entries = try agedEntries(distinctShards: true)
        let shards = Set(entries.map { URL(fileURLWithPath: $0).deletingLastPathComponent().path })
        #expect(shards.count == 3)
        let bad = try #require(entries.first)
        let badShard = URL(fileURLWithPath: bad).deletingLastPathComponent().path
        _ = try fetchUnprivileged(["cache-info"])  // hands the cache to the unprivileged user (when root)
        #expect(chmod(badShard, 0) == 0)
        defer { chmod(badShard, 0o755) }

        let info = try fetchUnprivileged(["--json", "cache-info"])
        #expect(info.status == 75, "\(info.status) \(info.standardError)")
        #expect(info.standardError.contains(badShard) && info.standardError.contains("left out of the counts"), "\(info.standardError)")
        #expect(try info.jsonLines().first?["entries"] as? Int == 2)
        let list = try fetchUnprivileged(["list"])
        #expect(list.status == 75 && list.lines.count == 2, "\(list.status) \(list.output) \(list.standardError)")
        let clean = try fetchUnprivileged(["clean", "--max-age", "1d"])
        #expect(clean.status == 75, "\(clean.status) \(clean.standardError)")
        #expect(clean.output.contains("removed 2 entries"), "\(clean.output)")
        chmod(badShard, 0o755)
        #expect(FileManager.default.fileExists(atPath: bad))
        #expect(entries.dropFirst().allSatisfy { !FileManager.default.fileExists(atPath: $0) })
    }
}

extension MaintenanceTrustTests {
    @Test func aFileInAShardsPlaceIsReportedAsTheShardAndTheRestIsDone() throws {
        let entries = try agedEntries(distinctShards: true)
        let badShard = try #require(entries.first.map { URL(fileURLWithPath: $0).deletingLastPathComponent().path })
        try FileManager.default.removeItem(atPath: badShard)
        #expect(FileManager.default.createFile(atPath: badShard, contents: Data("not a folder".utf8)))
        let info = try fetch(["--json", "cache-info"])
        #expect(info.status == 75 && info.standardError.contains(badShard), "\(info.status) \(info.standardError)")
        #expect(try info.jsonLines().first?["entries"] as? Int == 2)
        let list = try fetch(["list"])
        #expect(list.status == 75 && list.lines.count == 2, "\(list.status) \(list.output) \(list.standardError)")
        let clean = try fetch(["clean", "--max-age", "1d"])
        #expect(clean.status == 75 && clean.output.contains("removed 2 entries"), "\(clean.status) \(clean.standardError)")
        #expect(try String(contentsOfFile: badShard, encoding: .utf8) == "not a folder")
    }

    @Test func aSettingsFileWithWindowsLineEndsIsRead() throws {
        let entries = try agedEntries()
        try writeSettings("imgcache-settings 1\r\nmax-age 2592000\r\n")
        let clean = try fetch(["clean"])
        #expect(clean.status == 0 && clean.standardError.isEmpty, "\(clean.standardError)")
        #expect(entries.allSatisfy { FileManager.default.fileExists(atPath: $0) })
    }

    /// Runs imgcache with a bound on its time (a command waiting on a FIFO would wait for ever).
    func fetchBounded(_ arguments: [String]) throws -> RunResult {
        let quoted = (["--cache-dir", cacheRoot] + arguments).map { "'\($0)'" }.joined(separator: " ")
        return try ImgCacheProcess.runShell("timeout -s KILL 20 \"$BIN\" \(quoted)", environment: ["BIN": Paths.binary, "PATH": "/usr/bin:/bin"],
                                            home: home.path, workingDirectory: home.path)
    }

    @Test(arguments: ["settings", "CACHEDIR.TAG", "stats", "lock"])
    func aFIFOPlantedInTheNamespaceMakesNoCommandWait(name: String) throws {
        let entries = try agedEntries()
        _ = try fetch(["cache-info"])
        let path = namespace + "/" + name
        try? FileManager.default.removeItem(atPath: path)
        #expect(mkfifo(path, 0o644) == 0)
        let shard = URL(fileURLWithPath: entries[0]).deletingLastPathComponent().path
        try? FileManager.default.removeItem(atPath: shard + "/urls")
        #expect(mkfifo(shard + "/urls", 0o644) == 0)
        for arguments in [["config"], ["clean", "-q"], ["cache-info"], ["list"], ["fetch", server.url("logo.png")],
                          ["remove", "--dry-run", server.url("photo.jpg")], ["remove", "--dry-run", "--match", "*"], ["clear", "--failed"]] {
            let result = try fetchBounded(arguments)
            #expect(result.status != 137, "\(name): \(arguments) waited until killed")
        }
        // A clean that could not read its settings removed nothing.
        if name == "settings" { #expect(entries.allSatisfy { FileManager.default.fileExists(atPath: $0) }) }
    }

    @Test func clearGoesOnPastAnUnreadableShardAndSaysSoEvenWithQuiet() throws {
        let entries = try agedEntries()
        let bad = try #require(entries.first)
        let badShard = URL(fileURLWithPath: bad).deletingLastPathComponent().path
        _ = try fetchUnprivileged(["cache-info"])
        #expect(chmod(badShard, 0) == 0)
        defer { chmod(badShard, 0o755) }
        let clear = try fetchUnprivileged(["-q", "--json", "clear"])
        #expect(clear.status == 75, "\(clear.status) \(clear.standardError)")
        #expect(clear.standardError.contains(badShard) && clear.standardError.contains("not cleared"), "\(clear.standardError)")
        let line = try #require(try clear.jsonLines().first)
        // The others may share the bad shard (the server's port changes the keys): those stay too.
        let inBadShard = entries.filter { URL(fileURLWithPath: $0).deletingLastPathComponent().path == badShard }
        #expect(line["removed_entries"] as? Int == entries.count - inBadShard.count && line["unreadable_shards"] as? Int == 1, "\(line)")
        chmod(badShard, 0o755)
        #expect(inBadShard.allSatisfy { FileManager.default.fileExists(atPath: $0) })
        #expect(entries.filter { !inBadShard.contains($0) }.allSatisfy { !FileManager.default.fileExists(atPath: $0) })
        // clean -q says an unreadable shard too: it decides the exit status.
        chmod(badShard, 0)
        let clean = try fetchUnprivileged(["-q", "clean"])
        #expect(clean.status == 75 && clean.standardError.contains(badShard), "\(clean.status) \(clean.standardError)")
    }

    @Test func aTeamMaskIsNotWarnedOfButEveryoneIs() throws {
        _ = try agedEntries()
        let team = try fetch(["config", "--umask", "002"])
        #expect(team.status == 0 && !team.standardError.contains("warning"), "\(team.standardError)")
        let later = try fetch(["cache-info"])
        #expect(!later.standardError.contains("writable by its group"), "\(later.standardError)")
        let closed = try fetch(["config", "--umask", "077"])
        #expect(!closed.standardError.contains("writable by its group"), "\(closed.standardError)")
        // A mask open to every user is never remembered; asked for in the environment, it is warned of.
        let refused = try fetch(["config", "--umask", "000"])
        #expect(refused.status == 64, "\(refused.standardError)")
        let open = try fetch(["config", "--umask", "002"], environment: ["IMGCACHE_UMASK": "000"])
        #expect(open.standardError.contains("lets every user of this machine replace cached images"), "\(open.standardError)")
        // Without a mask chosen for the cache, a group-writable namespace is warned of.
        #expect(try fetch(["config", "--umask", "none"]).status == 0)
        chmod(namespace, 0o775)
        #expect(try fetch(["cache-info"]).standardError.contains("writable by its group"))
    }
}

/// The cron line acts on imgcache's own folders, found where the user put them.
@Suite final class CacheFolderTests: LoopbackCacheSuite {
    let work: TemporaryDirectory

    override init() throws {
        work = try TemporaryDirectory("imgcache-folders")
        try super.init()
    }

    func run(_ arguments: [String]) throws -> RunResult {
        try ImgCacheProcess.run(arguments, home: home.path)
    }

    @Test func aCacheRootMovedBehindALinkIsFollowedByEveryCommand() throws {
        let real = work.appending("disk2/imgcache"), link = work.appending("imgcache")
        try FileManager.default.createDirectory(atPath: real, withIntermediateDirectories: true)
        #expect(symlink(real, link) == 0)
        #expect(try run(["--cache-dir", link, "fetch", server.url("logo.png")]).status == 0)
        #expect(try run(["--cache-dir", link, "-n", "thumbs", "fetch", server.url("photo.jpg")]).status == 0)
        // The README's cron line, through the link.
        let clean = try run(["--cache-dir", link, "--json", "clean", "--all-namespaces"])
        #expect(clean.status == 0, "\(clean.standardError)")
        #expect(try clean.jsonLines().map { $0["namespace"] as? String } == ["default", "thumbs"])
        let info = try run(["--cache-dir", link, "--json", "cache-info", "--all-namespaces"])
        #expect(try info.status == 0 && info.jsonLines().count == 2, "\(info.standardError)")
        #expect(try run(["--cache-dir", link, "list"]).status == 0)
        #expect(try run(["--cache-dir", link, "clear", "--all-namespaces"]).status == 0)
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: link)) == real)
        // A link to a disk not mounted (nothing there): said as such, and its target is not made.
        let dangling = work.appending("unmounted")
        #expect(symlink(work.appending("disk3/imgcache"), dangling) == 0)
        let missing = try run(["--cache-dir", dangling, "fetch", server.url("logo.png")])
        #expect(missing.status == 73 && missing.standardError.contains(
            "\(dangling): it is a symbolic link to \(work.appending("disk3/imgcache")), which does not exist"), "\(missing.standardError)")
        #expect(!FileManager.default.fileExists(atPath: work.appending("disk3")))
    }

    @Test func aNamespaceThatIsALinkIsNeitherReadNorWrittenThrough() throws {
        let root = work.appending("cache"), elsewhere = work.appending("elsewhere")
        // A real namespace, then moved away and linked back.
        #expect(try run(["--cache-dir", root, "fetch", server.url("logo.png")]).status == 0)
        try FileManager.default.moveItem(atPath: root + "/default", toPath: elsewhere)
        #expect(symlink(elsewhere, root + "/default") == 0)
        let before = try FileManager.default.contentsOfDirectory(atPath: elsewhere).sorted()
        for arguments in [["fetch", server.url("logo.png")], ["fetch", server.url("photo.jpg")], ["fetch", "--cache-only", server.url("logo.png")],
                          ["clean"], ["clear"], ["list"]] {
            let result = try run(["--cache-dir", root] + arguments)
            #expect(result.status == 73, "\(arguments): \(result.standardError)")
            #expect(result.standardError.contains("is a symbolic link"), "\(arguments): \(result.standardError)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere).sorted() == before)
        // The cron line skips it, and says so.
        let all = try run(["--cache-dir", root, "-q", "clean", "--all-namespaces"])
        #expect(all.status == 73 && all.standardError.contains("namespace 'default' is a symbolic link"), "\(all.standardError)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere).sorted() == before)
        // A root that does not exist (a mistyped IMGCACHE_DIR) is said, not taken for an empty cache.
        let missing = try run(["--cache-dir", work.appending("no-such-root"), "clean", "--all-namespaces"])
        #expect(missing.status == 0 && missing.standardError.contains("there is no cache at"), "\(missing.standardError)")
    }

    @Test func onlyFoldersImgcacheMadeAreNamespaces() throws {
        let root = work.appending("cache")
        #expect(try run(["--cache-dir", root, "fetch", server.url("logo.png")]).status == 0)
        #expect(FileManager.default.fileExists(atPath: root + "/default/CACHEDIR.TAG"))
        // Another program's folder under the root, shaped like a namespace.
        let foreign = root + "/proj/0f"
        try FileManager.default.createDirectory(atPath: foreign, withIntermediateDirectories: true)
        let file = foreign + "/0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f.jpg"
        try Paths.fixture("photo.jpg").write(to: URL(fileURLWithPath: file))
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -90 * 86_400)], ofItemAtPath: file)

        let clean = try run(["--cache-dir", root, "--json", "clean", "--all-namespaces", "--max-age", "1s"])
        #expect(clean.status == 0, "\(clean.standardError)")
        #expect(try clean.jsonLines().map { $0["namespace"] as? String } == ["default"])
        let info = try run(["--cache-dir", root, "--json", "cache-info", "--all-namespaces"])
        #expect(try info.jsonLines().map { $0["namespace"] as? String } == ["default"])
        #expect(try run(["--cache-dir", root, "clear", "--all-namespaces"]).status == 0)
        #expect(FileManager.default.fileExists(atPath: file))

        // Named on purpose, it is refused and left as it is.
        // The URL log a namespace would have, so that remove finds the file by its URL.
        let url = "http://127.0.0.1:1/img0.jpg"
        try "0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f \(url)\n".write(toFile: foreign + "/urls", atomically: false, encoding: .utf8)
        for arguments in [["clean", "--max-age", "1s"], ["clear"], ["fetch", server.url("photo.jpg")], ["config", "--max-age", "1d"],
                          ["remove", url], ["remove", "--match", "*"], ["list"], ["cache-info"], ["clear", "--failed"]] {
            let result = try run(["--cache-dir", root, "-n", "proj"] + arguments)
            #expect(result.status == 73, "\(arguments): \(result.status)")
            #expect(result.standardError.contains("not one of its namespaces"), "\(arguments): \(result.standardError)")
            #expect(result.output.isEmpty, "\(arguments): \(result.output)")
        }
        #expect(try String(contentsOfFile: foreign + "/urls", encoding: .utf8).contains(url))
        #expect(FileManager.default.fileExists(atPath: file))
        #expect(try FileManager.default.contentsOfDirectory(atPath: root + "/proj") == ["0f"])

        // An empty folder may become a namespace; one made by an earlier version (a lock, no tag) is one.
        try FileManager.default.createDirectory(atPath: root + "/empty", withIntermediateDirectories: true)
        #expect(try run(["--cache-dir", root, "-n", "empty", "fetch", server.url("logo.png")]).status == 0)
        try FileManager.default.removeItem(atPath: root + "/default/CACHEDIR.TAG")
        let listed = try run(["--cache-dir", root, "--json", "cache-info", "--all-namespaces"])
        #expect(try listed.jsonLines().map { $0["namespace"] as? String } == ["default", "empty"])
        #expect(try run(["--cache-dir", root, "fetch", server.url("anim.gif")]).status == 0)
        #expect(FileManager.default.fileExists(atPath: root + "/default/CACHEDIR.TAG"))
    }
}
