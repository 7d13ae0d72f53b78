import ImgCacheCore
import Testing

@Suite struct RoughTimeTests {
    @Test(arguments: [(86_399.0, "1 day"), (84_600.0, "1 day"), (82_800.0, "23 hours"), (5_400.0, "2 hours"),
                      (100.0, "2 minutes"), (59.0, "1 minute"), (20.0, "20 seconds"), (0.2, "1 second"), (1_123_200.0, "2 weeks")]
          as [(Double, String)])
    func aSpanIsSaidInTheUnitItNearlyFills(seconds: Double, text: String) {
        #expect(TimeSpan(seconds: seconds).roughDescription == text)
    }
}

@Suite struct RelativeTimeTests {
    let now = 1_800_000_000.0

    @Test func theFutureTheFarPastAndTheImpossibleAreSaidAsSuch() {
        #expect(Timestamp.age(now + 3 * 86_400, now: now) == "in 3 days")
        #expect(Timestamp.age(now + 10, now: now) == "just now")
        #expect(Timestamp.age(now - 3 * 31_536_000, now: now) == "3 years ago")
        #expect(Timestamp.age(0, now: now) == "57 years ago")
        #expect(Timestamp.age(.nan, now: now) == "at an unknown time")
        // Damaged metadata can hold any number: it is shown, never a trap.
        #expect(!Timestamp.iso8601(1e300).isEmpty && !Timestamp.local(-1e300).isEmpty && !Timestamp.iso8601(.infinity).isEmpty)
        #expect(TimeSpan(seconds: 1e300).description == "1e+300s")
    }
}
