import Foundation
import ImgCacheCore
import Testing

/// Fetch options against each other, each pair with the outcome a user
/// expects written beside it: refresh, refresh=stale, a host given up,
/// --deadline, remote stores, --no-original, variants, --shard, pins and
/// --cache-only. Features hold alone; these hold where they meet.
@Suite final class OptionPairsTests: FaultServerSuite {
    func image(_ name: String, _ tag: Int) -> String { faults.baseURL + "/image/\(name)?pair=\(tag)" }

    /// The JSON line of each URL, in order.
    func lines(_ arguments: [String]) throws -> (status: Int32, lines: [[String: Any]], errors: String) {
        let result = try fetch(["--json"] + arguments)
        return (result.status, (try? result.jsonLines()) ?? [], result.standardError)
    }

    @Test func refreshAndAHostGivenUpServeTheCacheStale() throws {
        let urls = (0..<5).map { image("photo.jpg", $0) }
        #expect(try fetch(["fetch"] + urls).status == 0)
        faults.stop()
        let refreshed = try lines(["fetch", "--refresh", "-j", "1"] + urls)
        #expect(refreshed.status == 0 && refreshed.lines.map { $0["cache"] as? String } == Array(repeating: "stale", count: 5),
                "\(refreshed.errors)")
    }

    @Test func refreshStaleAndAFreshEntryAskNothingOfADownOrigin() throws {
        let url = faults.baseURL + "/fresh/3600/photo.jpg"
        #expect(try fetch(["fetch", url]).status == 0)
        faults.stop()
        let again = try lines(["fetch", "--refresh=stale", url])
        #expect(again.status == 0 && again.lines.first?["cache"] as? String == "disk", "\(again.errors)")
    }

    @Test func refreshStaleAndAStaleEntryRevalidateIt() throws {
        let url = faults.baseURL + "/fresh/0/photo.jpg"
        #expect(try fetch(["fetch", url]).status == 0)
        let again = try lines(["fetch", "--refresh=stale", url])
        #expect(again.lines.first?["cache"] as? String == "refreshed", "\(again.lines)")
        #expect(faults.requests.last?.header("If-None-Match") == "\"fresh-photo.jpg\"")
        // A 304 is told from new bytes (a server without validators sends the whole image again).
        #expect(again.lines.first?["modified"] as? Bool == false, "\(again.lines)")
        let plain = faults.baseURL + "/image/photo.jpg"
        #expect(try fetch(["fetch", plain]).status == 0)
        let whole = try lines(["fetch", "--refresh", plain])
        #expect(whole.lines.first?["cache"] as? String == "refreshed" && whole.lines.first?["modified"] as? Bool == true, "\(whole.lines)")
    }

    @Test func cacheOnlyAndAVariantOfACachedImageMakeItOffline() throws {
        let url = image("photo.jpg", 1)
        #expect(try fetch(["fetch", url]).status == 0)
        faults.stop()
        let made = try lines(["fetch", "--cache-only", "--thumbnail", "16x", url])
        #expect(made.status == 0 && made.lines.first?["width"] as? Int == 16, "\(made.errors)")
        // Of an image not cached: nothing to make it from, and nothing is asked.
        let missing = try lines(["fetch", "--cache-only", "--thumbnail", "16x", image("photo.jpg", 2)])
        #expect(missing.status == 1 && missing.errors.contains("not in the cache (--cache-only)"), "\(missing.errors)")
    }

    @Test func noOriginalAndARefreshDuringAnOutageServeTheVariants() throws {
        let url = image("logo.png", 3)
        let made = try lines(["fetch", "--no-original", "--thumbnail", "20x", url])
        #expect(made.status == 0)
        #expect(try fetch(["fetch", "--cache-only", url]).status == 1, "the original was kept")
        faults.stop()
        let refreshed = try lines(["fetch", "--refresh", "--no-original", "--thumbnail", "20x", url])
        #expect(refreshed.status == 0 && refreshed.lines.first?["cache"] as? String == "stale", "\(refreshed.errors)")
        #expect(refreshed.lines.first?["path"] as? String == made.lines.first?["path"] as? String)
    }

    @Test func deadlineAndAStallFailOnlyWhatWasNotDone() throws {
        let cached = image("photo.jpg", 4)
        #expect(try fetch(["fetch", cached]).status == 0)
        let run = try lines(["fetch", "--deadline", "1s", cached, faults.baseURL + "/stall"])
        #expect(run.status == 1)
        #expect(run.lines.first?["cache"] as? String == "disk")
        #expect(run.errors.contains("/stall: not done within the run's 1 s (--deadline)"), "\(run.errors)")
    }

    @Test func aPinAndACachedEntryOfOtherBytesNeverAnswerWithThem() throws {
        let url = image("photo.jpg", 5)
        #expect(try fetch(["fetch", url]).status == 0)
        let wrong = String(repeating: "0", count: 64)
        let pinned = try lines(["fetch", url + "#sha256=" + wrong])
        #expect(pinned.status == 1 && pinned.errors.contains("sha256 mismatch"), "\(pinned.errors)")
        // The entry stays for plain requests.
        #expect(try lines(["fetch", "--cache-only", url]).lines.first?["cache"] as? String == "disk")
        // The right pin is answered from the cache, even with --cache-only.
        let right = try SHA256.hex([UInt8](try Paths.fixture("photo.jpg")))
        let hit = try lines(["fetch", "--cache-only", url + "#sha256=" + right])
        #expect(hit.status == 0 && hit.lines.first?["cache"] as? String == "disk", "\(hit.errors)")
    }

    @Test func shardAndCacheOnlyAnswerTheirPartAndLeaveTheRest() throws {
        let urls = (0..<12).map { image("photo.jpg", 100 + $0) }
        #expect(try fetch(["fetch"] + urls).status == 0)
        faults.stop()
        let list = home.appending("shard.txt")
        try urls.joined(separator: "\n").write(toFile: list, atomically: false, encoding: .utf8)
        var answered = 0
        for part in 0..<3 {
            let run = try lines(["prefetch", "--cache-only", "--shard", "\(part)/3", list])
            #expect(run.status == 0, "\(run.errors)")
            let summary = try #require(run.lines.last)
            answered += summary["cached"] as? Int ?? 0
            #expect((summary["cached"] as? Int ?? 0) + (summary["other_shards"] as? Int ?? 0) == 12)
        }
        #expect(answered == 12)
    }

    @Test func aStoreThatIsDownAndCacheOnlyAskNothingOfTheStore() throws {
        let url = image("photo.jpg", 6)
        #expect(try fetch(["fetch", url]).status == 0)
        let closed = try NginxServer.freePort()
        let store = "http://127.0.0.1:\(closed)/store"
        let hit = try lines(["fetch", "--cache-only", "--remote", store, url])
        #expect(hit.status == 0 && hit.lines.first?["cache"] as? String == "disk" && !hit.errors.contains("remote"), "\(hit.errors)")
        let miss = try lines(["fetch", "--cache-only", "--remote", store, image("photo.jpg", 7)])
        #expect(miss.status == 1 && miss.errors.contains("not in the cache") && !miss.errors.contains("remote"), "\(miss.errors)")
    }

    @Test func aStoreThatIsDownAndARefreshDuringAnOutageServeTheCache() throws {
        let url = image("photo.jpg", 8)
        #expect(try fetch(["fetch", url]).status == 0)
        faults.stop()
        let closed = try NginxServer.freePort()
        let refreshed = try lines(["fetch", "--refresh", "--remote", "http://127.0.0.1:\(closed)/store", url])
        #expect(refreshed.status == 0 && refreshed.lines.first?["cache"] as? String == "stale", "\(refreshed.errors)")
    }

    @Test func variantsAndAHostGivenUpNeedNoHostForANewSizeOfACachedImage() throws {
        let cached = (0..<3).map { image("photo.jpg", 200 + $0) }
        #expect(try fetch(["fetch"] + cached).status == 0)
        faults.stop()
        // Three misses give the host up; the cached images' new sizes are made all the same.
        let misses = (0..<3).map { image("logo.png", 300 + $0) }
        let run = try lines(["fetch", "-j", "1", "--thumbnail", "24x"] + misses + cached)
        #expect(run.status == 1)
        #expect(Array(run.lines.suffix(3)).allSatisfy { $0["width"] as? Int == 24 }, "\(run.errors)")
    }
}
