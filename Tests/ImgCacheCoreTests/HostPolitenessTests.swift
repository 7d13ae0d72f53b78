@testable import ImgCacheCore
import Testing

/// Which server a download counts against, for the per-host limits; `--rate`'s pacing, on a scripted
/// clock: requests to one host are due an interval apart from their turns, not from when the loop got
/// round to them, so a loop that wakes late keeps the rate.
@Suite struct HostPolitenessTests {
    @Test(arguments: [
        ("http://Example.COM/x.png", "example.com"), ("http://example.com:8080/x", "example.com:8080"),
        ("https://user:pass@h:81/x", "h:81"), ("https://a:b@h/x", "h"), ("http://h/x?port=:99", "h"),
        ("http://h/x#:77", "h"), ("http://[::1]:81/x", "[::1]:81"), ("http://[::1]/x", "[::1]"), ("http://h:/x", "h"),
    ])
    func aServerIsItsHostAndTheExplicitPort(url: String, expected: String) throws {
        let request = DownloadRequest(url: try RemoteURL(parsing: url), bodyDirectory: "/nonexistent")
        #expect(HostPoliteness.host(of: request) == expected)
    }

    /// Starts requests to one host whenever they are due, as a loop waking `lateness` seconds after
    /// each turn does; how many started in `seconds`.
    func started(rate: Double, lateness: Double, seconds: Double) -> Int {
        var politeness = HostPoliteness(concurrency: nil, rate: rate, failuresToGiveUp: 3)
        var now = 0.0, count = 0
        for _ in 0..<1_000_000 {
            guard let due = politeness.earliestStart("h", now: now) else { break }
            // The loop wakes a little after the turn (a whole millisecond's poll), and starts what is due.
            now = max(now, due) + (due > now ? lateness : 0)
            guard now < seconds else { break }
            politeness.started("h", now: now)
            _ = politeness.ended("h", failure: nil)
            count += 1
        }
        return count
    }

    @Test(arguments: [(200.0, 0.0007), (1000.0, 0.0009), (2000.0, 0.0009), (1.0, 0.015)])
    func aLoopThatWakesLateStillKeepsTheRate(rate: Double, lateness: Double) {
        let seconds = 10.0
        let count = started(rate: rate, lateness: lateness, seconds: seconds)
        #expect(Double(count) >= rate * seconds * 0.98 && Double(count) <= rate * seconds + 2, "\(rate)/s: \(count) in \(seconds) s")
    }

    /// After a pause longer than the slack (the host idle), the cadence starts again: no burst of the requests it missed.
    @Test func anIdleHostStartsItsCadenceAnew() {
        var politeness = HostPoliteness(concurrency: nil, rate: 10, failuresToGiveUp: 3)
        politeness.started("h", now: 100)
        #expect(politeness.earliestStart("h", now: 100) == 100.1)
        politeness.started("h", now: 105)
        #expect(politeness.earliestStart("h", now: 105) == 105.1)
    }
}
