import Foundation
import ImgCacheCore
import Testing

/// `remove` finds what fetch serves: by the same key (normal form, key
/// filter), whatever became of the URL log or the metadata, with the
/// variants made from that key and no other's.
@Suite final class RemoveTests: LoopbackCacheSuite {
    var namespace: String { cacheRoot + "/default" }

    func images() -> [String] {
        CacheInspection.storedFiles(under: namespace).filter { !$0.hasPrefix("failed/") }
    }

    @Test func aURLIsFoundByItsKeyWhateverBecameOfItsLogOrMetadata() throws {
        // Fetched through a key filter, with one signature; removed with another.
        #expect(try fetch(["fetch", "--key-filter", "strip-query", server.url("logo.png?sig=abc")]).status == 0)
        let signed = try fetch(["remove", "--key-filter", "strip-query", server.url("logo.png?sig=xyz")])
        #expect(signed.status == 0 && signed.lines.count == 1, "\(signed.output) \(signed.standardError)")
        #expect(images().isEmpty)

        // Its shard's URL log lost.
        let stored = try #require(try fetch(["fetch", server.url("photo.jpg")]).lines.first)
        try FileManager.default.removeItem(atPath: URL(fileURLWithPath: stored).deletingLastPathComponent().appendingPathComponent("urls").path)
        #expect(try fetch(["remove", server.url("photo.jpg")]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: stored))

        // Its metadata damaged.
        let damaged = try #require(try fetch(["fetch", server.url("anim.gif")]).lines.first)
        try FileSystem.setAttribute("user.imgcache", of: damaged, to: Array("garbage".utf8))
        #expect(try fetch(["remove", "HTTP://127.0.0.1:\(server.port)/anim.gif"]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: damaged))

        let missing = try fetch(["remove", server.url("never.png")])
        #expect(missing.status == 1 && missing.standardError.contains("not in the cache"))
    }

    @Test func aURLsVariantsGoWithItAndAnotherUsersEntriesStay() throws {
        let url = server.url("photo.jpg")
        #expect(try fetch(["fetch", url]).status == 0)
        #expect(try fetch(["fetch", "--thumbnail", "16x16", url]).status == 0)
        #expect(try fetch(["fetch", "--format", "webp", url]).status == 0)
        let alice = "http://alice:one@127.0.0.1:\(server.port)/logo.png", bob = "http://bob:two@127.0.0.1:\(server.port)/logo.png"
        #expect(try fetch(["fetch", alice, bob]).status == 0)
        #expect(try fetch(["fetch", "--thumbnail", "8x8", alice, bob]).status == 0)
        #expect(images().count == 7)

        let removed = try fetch(["--json", "remove", url])
        #expect(removed.status == 0)
        #expect(try removed.jsonLines().count == 3, "\(removed.output)")
        #expect(try fetch(["remove", alice]).lines.count == 2)
        // Bob's entry and thumbnail stay: the log shows both as ***, the keys tell them apart.
        #expect(images().count == 2)
        #expect(try fetch(["fetch", "--cache-only", bob]).status == 0)
        #expect(try fetch(["fetch", "--cache-only", "--thumbnail", "8x8", bob]).status == 0)
        // Each removed entry's URL log lines went with it.
        let logs = CacheInspection.files(under: namespace).filter { $0.hasSuffix("/urls") }
        let lines = try logs.flatMap { try String(contentsOfFile: namespace + "/" + $0, encoding: .utf8).split(separator: "\n") }
        #expect(lines.count == 2, "\(lines)")
    }

    @Test func patternsMatchAsListMatchesThemAndOneThatMatchesNothingFails() throws {
        #expect(try fetch(["fetch", server.url("logo.png"), server.url("photo.jpg")]).status == 0)
        // A part of the URL, for list and remove alike.
        #expect(try fetch(["list", "logo"]).lines.count == 1)
        let dry = try fetch(["remove", "--dry-run", "--match", "logo"])
        #expect(dry.status == 0 && dry.lines.count == 1, "\(dry.output)")
        let none = try fetch(["remove", "--match", "nothing-like-this", "--match", "*.jpg"])
        #expect(none.status == 1 && none.standardError.contains("no entry matches 'nothing-like-this'"), "\(none.standardError)")
        #expect(images().count == 1)
    }

    @Test func cleanKeepsOneURLLogLineAnEntry() throws {
        let stored = try #require(try fetch(["fetch", server.url("logo.png")]).lines.first)
        let log = URL(fileURLWithPath: stored).deletingLastPathComponent().appendingPathComponent("urls").path
        let line = try String(contentsOfFile: log, encoding: .utf8)
        // What 200 refetches of one key leave: a line each.
        try String(repeating: line, count: 200).write(toFile: log, atomically: false, encoding: .utf8)
        #expect(try fetch(["clean"]).status == 0)
        #expect(try String(contentsOfFile: log, encoding: .utf8) == line)
        #expect(try fetch(["list"]).lines.count == 1)
    }
}
