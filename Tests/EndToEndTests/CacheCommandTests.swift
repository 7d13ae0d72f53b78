import Foundation
import Testing

/// cache-info, clean and clear through the binary, and the fetch options that
/// shape the cache (key filter, read-only paths).
@Suite final class CacheCommandTests: LoopbackCacheSuite {
    func entryPaths(_ namespace: String = "default") -> [String] {
        CacheInspection.storedFiles(under: cacheRoot + "/" + namespace).filter { $0.contains("/") }
    }

    @Test func cacheInfoReportsEntriesSizesAndLimits() throws {
        let empty = try #require(try fetch(["--json", "cache-info"]).jsonLines().first)
        #expect(empty["exists"] as? Bool == false)
        #expect(empty["entries"] as? Int == 0)
        _ = try fetch(["fetch", server.url("logo.png"), server.url("photo.jpg")])
        let result = try fetch(["--json", "cache-info"])
        #expect(result.status == 0)
        let info = try #require(result.jsonLines().first)
        #expect(info["namespace"] as? String == "default")
        #expect(info["path"] as? String == cacheRoot + "/default")
        #expect(info["entries"] as? Int == 2)
        #expect(info["bytes"] as? Int == (try Paths.fixture("logo.png").count + Paths.fixture("photo.jpg").count))
        #expect((info["allocated_bytes"] as? Int ?? 0) >= (info["bytes"] as? Int ?? 0))
        #expect(info["max_size"] is NSNull)
        #expect(info["max_age"] as? Int == 604_800)
        #expect(info["max_age_source"] as? String == "default")
        #expect(info["failed_urls"] as? Int == 0)
        #expect((info["oldest_access"] as? String)?.hasSuffix("Z") == true)
        let human = try fetch(["cache-info"])
        #expect(human.output.contains("\nentries:      2 ("))
        #expect(human.lines.contains("max age:      1w (default)"))
    }

    @Test func cacheInfoAndClearCoverAllNamespaces() throws {
        _ = try fetch(["-n", "alpha", "fetch", server.url("logo.png")])
        _ = try fetch(["-n", "beta", "fetch", server.url("logo.png"), server.url("anim.gif")])
        let info = try fetch(["--json", "cache-info", "--all-namespaces"]).jsonLines()
        #expect(info.map { $0["namespace"] as? String } == ["alpha", "beta"])
        #expect(info.map { $0["entries"] as? Int } == [1, 2])
        let cleared = try fetch(["--json", "clear", "--all-namespaces"])
        #expect(cleared.status == 0)
        #expect(try cleared.jsonLines().map { $0["removed_entries"] as? Int } == [1, 2])
        #expect(entryPaths("alpha").isEmpty && entryPaths("beta").isEmpty)
    }

    @Test func cleanRemembersItsLimitsForTheNextRun() throws {
        _ = try fetch(["fetch", server.url("logo.png"), server.url("photo.jpg"), server.url("anim.gif")])
        let remembered = try fetch(["--json", "clean", "--max-size", "1", "--max-age", "30d", "--remember", "--dry-run"])
        #expect(remembered.status == 64)
        let set = try fetch(["--json", "clean", "--max-size", "100M", "--max-age", "30d", "--remember"])
        #expect(set.status == 0, "\(set.standardError)")
        #expect(try set.jsonLines().first?["removed_entries"] as? Int == 0)
        let info = try #require(try fetch(["--json", "cache-info"]).jsonLines().first)
        #expect(info["max_size"] as? Int == 100_000_000)
        #expect(info["max_size_source"] as? String == "remembered")
        #expect(info["max_age"] as? Int == 2_592_000)
        // A flagless clean (a cron line) applies them: nothing is 30 days old.
        let plain = try #require(try fetch(["--json", "clean"]).jsonLines().first)
        #expect(plain["max_age"] as? Int == 2_592_000)
        #expect(plain["removed_entries"] as? Int == 0)
        // Limits given on the line win over remembered ones, without replacing them.
        let once = try #require(try fetch(["--json", "clean", "--max-size", "1"]).jsonLines().first)
        #expect(once["removed_entries"] as? Int == 3)
        #expect(try fetch(["--json", "cache-info"]).jsonLines().first?["max_size"] as? Int == 100_000_000)
    }

    @Test func cleanExpiresByLastUseAndADryRunChangesNothing() throws {
        let old = try #require(try fetch(["fetch", server.url("logo.png")]).lines.first)
        let fresh = try #require(try fetch(["fetch", server.url("photo.jpg")]).lines.first)
        let tenDaysAgo = Date().addingTimeInterval(-10 * 86_400)
        try FileManager.default.setAttributes([.modificationDate: tenDaysAgo], ofItemAtPath: old)
        let dry = try fetch(["clean", "--dry-run"])
        #expect(dry.status == 0)
        #expect(dry.lines.first?.hasPrefix("would remove \(old) (") == true, "\(dry.output)")
        #expect(dry.lines.contains { $0.hasPrefix("namespace 'default': would remove 1 entry") }, "\(dry.output)")
        #expect(FileManager.default.fileExists(atPath: old))
        let real = try #require(try fetch(["--json", "clean"]).jsonLines().first)
        #expect(real["expired_entries"] as? Int == 1)
        #expect(real["remaining_entries"] as? Int == 1)
        #expect(!FileManager.default.fileExists(atPath: old) && FileManager.default.fileExists(atPath: fresh))
        // A hit is a use: an entry used today survives a one-day limit.
        try FileManager.default.setAttributes([.modificationDate: tenDaysAgo], ofItemAtPath: fresh)
        _ = try fetch(["fetch", server.url("photo.jpg")])
        #expect(try fetch(["--json", "clean", "--max-age", "1d"]).jsonLines().first?["removed_entries"] as? Int == 0)
    }

    @Test(arguments: [["--max-size", "0"], ["--max-size", "12X"], ["--max-age", "7q"], ["--max-age", ""], ["--remember"]])
    func badLimitsAreUsageErrorsThatChangeNothing(arguments: [String]) throws {
        let path = try #require(try fetch(["fetch", server.url("logo.png")]).lines.first)
        let result = try fetch(["clean"] + arguments)
        #expect(result.status == 64)
        #expect(result.errorLines.first?.hasPrefix("imgcache: error: ") == true)
        #expect(FileManager.default.fileExists(atPath: path))
    }

    @Test(arguments: ["../x", "a/b", "", String(repeating: "n", count: 65), ".hidden"])
    func badNamespaceNamesAreRefusedByEveryCommand(name: String) throws {
        _ = try fetch(["fetch", server.url("logo.png")])
        for command in [["cache-info"], ["clean"], ["clear"], ["fetch", server.url("photo.jpg")]] {
            let result = try fetch(["-n", name] + command)
            #expect(result.status == 64, "\(command)")
            #expect(result.errorLines.first?.contains("namespace") == true)
        }
        #expect(try CacheInspection.files(under: home.path).count == 5)  // the entry, its shard's URL log, the lock, the statistics, the tag
    }

    @Test func clearDoesNotFollowANamespaceThatIsALink() throws {
        let outside = home.appending("outside")
        try FileManager.default.createDirectory(atPath: outside + "/ab", withIntermediateDirectories: true)
        let precious = outside + "/ab/0123456789abcdef0123456789abcdef.png"
        try Paths.fixture("logo.png").write(to: URL(fileURLWithPath: precious))
        try FileManager.default.createDirectory(atPath: cacheRoot, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: cacheRoot + "/linked", withDestinationPath: outside)
        let result = try fetch(["-n", "linked", "clear"])
        #expect(result.status == 73)
        #expect(result.errorLines.first?.hasPrefix("imgcache: error: namespace 'linked': \(cacheRoot)/linked is a symbolic link; imgcache does not follow links inside the cache") == true, "\(result.errorLines)")
        #expect(try fetch(["-n", "linked", "clean", "--max-age", "1s"]).status == 73)
        #expect(FileManager.default.fileExists(atPath: precious))
        // --all-namespaces skips it.
        #expect(try fetch(["--json", "clear", "--all-namespaces"]).output.isEmpty)
        #expect(FileManager.default.fileExists(atPath: precious))
    }

    @Test func clearFailedForgetsFailuresAndKeepsEntries() throws {
        let path = try #require(try fetch(["fetch", server.url("logo.png")]).lines.first)
        let failed = cacheRoot + "/default/failed"
        try FileManager.default.createDirectory(atPath: failed, withIntermediateDirectories: true)
        try "imgcache-failed 1\nurl http://x/404\nreason HTTP 404\n".write(toFile: failed + "/" + (try CacheInspection.md5("http://x/404")),
                                                                       atomically: false, encoding: .utf8)
        #expect(try fetch(["--json", "cache-info"]).jsonLines().first?["failed_urls"] as? Int == 1)
        let plain = try fetch(["clear"])
        #expect(plain.lines.contains("  kept 1 failed URL (clear --failed forgets them)"))
        let result = try fetch(["--json", "clear", "--failed"])
        #expect(try result.jsonLines().first?["removed_failed_urls"] as? Int == 1)
        #expect(try fetch(["--json", "cache-info"]).jsonLines().first?["failed_urls"] as? Int == 0)
        _ = path
    }

    @Test func aKeyFilterMakesSignedURLsShareOneEntry() throws {
        let first = try fetch(["--json", "fetch", "--key-filter", "keep-query=w", server.url("logo.png?w=64&sig=aaa&exp=1")])
        let second = try fetch(["--json", "fetch", "--key-filter", "keep-query=w", server.url("logo.png?w=64&sig=bbb&exp=2")])
        let other = try fetch(["--json", "fetch", "--key-filter", "keep-query=w", server.url("logo.png?w=128&sig=ccc")])
        #expect(try first.jsonLines().first?["cache"] as? String == "none")
        #expect(try second.jsonLines().first?["cache"] as? String == "disk")
        #expect(try other.jsonLines().first?["cache"] as? String == "none")
        #expect(server.requests.filter { $0.uri.hasPrefix("/logo.png?") }.count == 2)
        let strip = try fetch(["--json", "fetch", "--key-filter", "strip-query", server.url("logo.png?anything")])
        #expect(try strip.jsonLines().first?["path"] as? String != nil)
        #expect(try fetch(["fetch", "--key-filter", "keep-query", server.url("logo.png")]).status == 64)
    }

    @Test func aReadOnlyPathAnswersMissesAndIsNeverWritten() throws {
        let url = server.url("photo.jpg")
        let shipped = try #require(try fetch(["-n", "shipped", "fetch", url]).lines.first)
        let before = try FileManager.default.attributesOfItem(atPath: shipped)[.modificationDate] as? Date
        try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: cacheRoot + "/shipped")
        server.stop()
        let result = try fetch(["--json", "fetch", "--read-only-path", cacheRoot + "/shipped", url])
        #expect(result.status == 0, "\(result.standardError)")
        let object = try #require(result.jsonLines().first)
        #expect(object["path"] as? String == shipped)
        #expect(object["cache"] as? String == "disk")
        #expect(try FileManager.default.attributesOfItem(atPath: shipped)[.modificationDate] as? Date == before)
        #expect(entryPaths().isEmpty)
    }
}
