import Foundation
import Testing

/// `list`, `remove`, `clear --failed URL` and `config`: seeing and managing
/// what a namespace holds, as a user of `pip cache` would.
@Suite final class InspectionTests: LoopbackCacheSuite {
    var namespace: String { cacheRoot + "/default" }

    /// Caches three images, a thumbnail of one, and two failures.
    func warm() throws {
        #expect(try fetch(["fetch", server.url("photo.jpg"), server.url("logo.png"), server.url("anim.gif")]).status == 0)
        #expect(try fetch(["fetch", "--thumbnail", "16x16", server.url("photo.jpg")]).status == 0)
        #expect(try fetch(["fetch", server.url("status/404"), server.url("page.html")]).status == 1)
    }

    @Test func listShowsEveryEntryWithItsURLSizeFormatAndPixels() throws {
        try warm()
        let listed = try fetch(["list"])
        #expect(listed.status == 0)
        #expect(listed.lines.count == 4, "\(listed.output)")
        let photo = try #require(listed.lines.first { $0.hasSuffix(server.url("photo.jpg")) })
        #expect(photo.contains("2.2 kB") && photo.contains("jpeg") && photo.contains("96x64"))
        #expect(listed.lines.contains { $0.contains(server.url("photo.jpg") + " [imgcache-thumbnail(16x16)") })
        #expect(listed.standardError.contains("4 entries"))

        // Patterns: a glob on the whole URL, or a substring.
        #expect(try fetch(["list", "*.png"]).lines.count == 1)
        #expect(try fetch(["list", "photo"]).lines.count == 2)
        #expect(try fetch(["list", "nothing-like-this"]).lines.isEmpty)

        // --sort size: the largest first; --sort url: alphabetical.
        let bySize = try fetch(["--json", "list", "--sort", "size"]).jsonLines().compactMap { $0["bytes"] as? Int }
        #expect(bySize == bySize.sorted(by: >) && bySize.count == 4)
        let byURL = try fetch(["--json", "list", "--sort", "url"]).jsonLines().compactMap { $0["url"] as? String }
        #expect(byURL == byURL.sorted())

        let objects = try fetch(["--json", "list"]).jsonLines()
        for object in objects { JSONContract.expect(object, matches: "list") }
        // Each path is the file fetch answered with.
        let answered = try fetch(["fetch", server.url("logo.png")]).lines.first
        #expect(objects.contains { $0["path"] as? String == answered })
        #expect(try fetch(["list", "--sort", "sideways"]).status == 64)
    }

    @Test func listFailedShowsCausesAndAges() throws {
        try warm()
        let failed = try fetch(["list", "--failed"])
        #expect(failed.lines.count == 2)
        #expect(failed.lines.contains { $0.contains(server.url("status/404")) && $0.contains("HTTP 404") })
        #expect(failed.lines.contains { $0.contains(server.url("page.html")) && $0.contains("not an image") })
        let objects = try fetch(["--json", "list", "--failed"]).jsonLines()
        for object in objects { JSONContract.expect(object, matches: "list --failed") }
        #expect(objects.allSatisfy { $0["expired"] as? Bool == false })
        // Expired under a shorter TTL: still listed, marked so.
        #expect(try fetch(["config", "--failed-ttl", "1ms"]).status == 0)
        let later = try fetch(["--json", "list", "--failed"]).jsonLines()
        #expect(later.count == 2 && later.allSatisfy { $0["expired"] as? Bool == true })
    }

    @Test func anEmptyOrMissingNamespaceListsNothing() throws {
        let result = try fetch(["-n", "never-used", "list"])
        #expect(result.status == 0 && result.lines.isEmpty && result.standardError.contains("0 entries"))
    }

    @Test func removeTakesAURLsEntriesAndThumbnailsAndNothingElse() throws {
        try warm()
        let removed = try fetch(["remove", server.url("photo.jpg") + "#top"])
        #expect(removed.status == 0)
        #expect(removed.lines.count == 2 && removed.lines.allSatisfy { $0.hasPrefix("removed " + server.url("photo.jpg")) })
        let left = try fetch(["--json", "list"]).jsonLines().compactMap { $0["url"] as? String }
        #expect(Set(left) == [server.url("logo.png"), server.url("anim.gif")])
        // Fetched again: a download, as for any miss.
        let before = server.requestCount("photo.jpg")
        #expect(try fetch(["fetch", server.url("photo.jpg")]).status == 0 && server.requestCount("photo.jpg") == before + 1)

        // A URL without an entry: said, exit 1, the others still removed.
        let partly = try fetch(["remove", server.url("logo.png"), server.url("never.png")])
        #expect(partly.status == 1 && partly.standardError.contains("not in the cache: " + server.url("never.png")))
        #expect(try fetch(["list", "logo"]).lines.isEmpty)
        #expect(try fetch(["remove"]).status == 64)
    }

    @Test func removeMatchGlobsAndDryRunsChangeNothing() throws {
        try warm()
        let dry = try fetch(["--json", "remove", "--dry-run", "--match", "*.gif", "--match", "*/photo.*"])
        let objects = try dry.jsonLines()
        #expect(objects.count == 3)
        for object in objects { JSONContract.expect(object, matches: "remove") }
        #expect(try fetch(["list"]).lines.count == 4)
        let done = try fetch(["-q", "remove", "--match", "*.gif"])
        #expect(done.status == 0 && done.output.isEmpty)
        #expect(try fetch(["list"]).lines.count == 3)
        // Every remaining entry is whole, and a later clean finds nothing amiss.
        let problems = CacheInspection.problems(inNamespace: namespace) { key in
            try? Paths.fixture(String(key.split(separator: "/").last ?? ""))
        }
        #expect(problems.isEmpty, "\(problems)")
        #expect(try fetch(["--json", "clean"]).jsonLines().first?["removed_leftovers"] as? Int == 0)
    }

    @Test func clearFailedForgetsOneURL() throws {
        try warm()
        let cleared = try fetch(["clear", "--failed", server.url("status/404")])
        #expect(cleared.status == 0)
        let left = try fetch(["--json", "list", "--failed"]).jsonLines().compactMap { $0["url"] as? String }
        #expect(left == [server.url("page.html")])
        // Tried again at once, without --retry-failed.
        let before = server.requestCount("status/404")
        _ = try fetch(["fetch", server.url("status/404")])
        #expect(server.requestCount("status/404") == before + 1)
        let unknown = try fetch(["clear", "--failed", server.url("status/410")])
        #expect(unknown.status == 0 && unknown.standardError.contains("not on the failed-URL list"))
        #expect(try fetch(["clear", server.url("status/404")]).status == 64)
    }

    @Test func configShowsAndSetsLimitsWithoutCleaning() throws {
        try warm()
        let shown = try fetch(["config"])
        #expect(shown.status == 0 && shown.output.contains("max size:") && shown.output.contains("(default)"))
        let set = try fetch(["config", "--max-size", "1k", "--max-age", "1mo", "--failed-ttl", "2h"])
        #expect(set.status == 0 && set.output.contains("1mo") == false && set.output.contains("30d (remembered)"))
        // Nothing was cleaned, though the entries take more than 1k.
        #expect(try fetch(["list"]).lines.count == 4)
        let object = try #require(try fetch(["--json", "config"]).jsonLines().first)
        JSONContract.expect(object, matches: "config")
        #expect(object["max_size"] as? Int == 1000 && object["max_age"] as? Int == 30 * 86_400 && object["failed_ttl"] as? Int == 7200)
        // clean uses them; cache-info shows them.
        #expect(try fetch(["--json", "cache-info"]).jsonLines().first?["max_size_source"] as? String == "remembered")
        #expect(try fetch(["--json", "clean"]).jsonLines().first?["removed_entries"] as? Int ?? 0 > 0)
        let reset = try fetch(["--json", "config", "--reset"])
        #expect(try reset.jsonLines().first?["max_size_source"] as? String == "default")

        let unit = try fetch(["config", "--max-age", "3 fortnights"])
        #expect(unit.status == 64 && unit.standardError.contains("mo") && unit.standardError.contains("w"))
        #expect(try fetch(["config", "--reset", "--max-age", "1d"]).status == 64)
    }
}
