import Foundation
import Testing

/// HTTP freshness (RFC 9111) where it helps a cache of images: each entry
/// keeps when its response stops being fresh, `--refresh=stale` revalidates
/// only the entries past it, and a plain `--refresh` still revalidates all.
@Suite final class FreshnessTests: FaultServerSuite {
    let work: TemporaryDirectory

    override init() throws {
        work = try TemporaryDirectory("imgcache-fresh")
        try super.init()
    }

    @Test func refreshStaleRevalidatesOnlyWhatIsNoLongerFresh() throws {
        let fresh = faults.baseURL + "/fresh/3600/logo.png"       // max-age=3600
        let expired = faults.baseURL + "/fresh/0/photo.jpg"       // max-age=0: stale at once
        let heuristic = faults.baseURL + "/modified/100/anim.gif" // Last-Modified 100 days ago: fresh for 10
        let unknown = faults.baseURL + "/image/sticker.webp"      // nothing said: stale
        let list = try work.write(lines: [fresh, expired, heuristic, unknown])
        #expect(try fetch(["prefetch", list]).status == 0)

        let shown = try fetch(["--json", "fetch", fresh, expired, heuristic, unknown]).jsonLines()
        let now = Date().timeIntervalSince1970
        let until = shown.map { ($0["fresh_until"] as? String).flatMap { ISO8601DateFormatter().date(from: $0)?.timeIntervalSince1970 } }
        #expect(until[0].map { abs($0 - now - 3600) < 120 } == true, "\(shown[0])")
        #expect(until[1].map { $0 <= now } == true, "\(shown[1])")
        #expect(until[2].map { abs($0 - now - 10 * 86_400) < 120 } == true, "\(shown[2])")
        #expect(until[3] == nil, "\(shown[3])")

        let stale = try fetch(["--json", "prefetch", "--refresh=stale", list])
        #expect(stale.status == 0, "\(stale.standardError)")
        let summary = try stale.jsonLines().last
        #expect(summary?["refreshed"] as? Int == 2 && summary?["cached"] as? Int == 2, "\(stale.output)")
        #expect(faults.requestCount(path: "/fresh/3600/logo.png") == 1)
        #expect(faults.requestCount(path: "/fresh/0/photo.jpg") == 2)
        #expect(faults.requestCount(path: "/modified/100/anim.gif") == 1)
        #expect(faults.requestCount(path: "/image/sticker.webp") == 2)
        // The revalidation of the fresh/0 entry was a conditional request, answered 304.
        #expect(faults.requests.last { $0.path == "/fresh/0/photo.jpg" }?.header("If-None-Match") == "\"fresh-photo.jpg\"")

        // A plain --refresh revalidates everything.
        #expect(try fetch(["prefetch", "--refresh", list]).status == 0)
        #expect(faults.requestCount(path: "/fresh/3600/logo.png") == 2)
        #expect(faults.requestCount(path: "/modified/100/anim.gif") == 2)
    }

    @Test func refreshTakesNoOtherValue() throws {
        let result = try fetch(["fetch", "--refresh=soon", faults.baseURL + "/image/logo.png"])
        #expect(result.status == 64 && result.standardError.contains("--refresh=stale"), "\(result.standardError)")
    }
}
