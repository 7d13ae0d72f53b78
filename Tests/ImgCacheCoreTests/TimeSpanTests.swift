@testable import ImgCacheCore
import Testing

@Suite struct TimeSpanTests {
    @Test(arguments: [("45s", 45.0), ("30m", 1800), ("12h", 43_200), ("7d", 604_800), ("2w", 1_209_600),
                      ("500ms", 0.5), ("2.5", 2.5), ("15", 15)])
    func parsesEveryUnit(text: String, seconds: Double) throws {
        #expect(try TimeSpan(parsing: text).seconds == seconds)
    }

    @Test(arguments: ["", "s", "7days", "-1s", "1.2.3s", "soon"])
    func refusesWhatIsNotADuration(text: String) {
        #expect(throws: ValueError.self) { try TimeSpan(parsing: text) }
    }

    /// Every quantity refuses an exponent the same way, with the same words: durations, sizes and rates.
    @Test func anExponentIsRefusedAlikeEverywhere() {
        // Said with the number written out, as it was meant.
        #expect(throws: ValueError.invalid("exponents are not taken: write the number out, as 1000000000")) { try TimeSpan(parsing: "1e9") }
        #expect(throws: ValueError.invalid("exponents are not taken: write the number out, as 2000000")) { try ByteSize(parsing: "2E6") }
        #expect(QuantityText.plainDecimal("1e9") == nil && QuantityText.plainDecimal("0x10") == nil && QuantityText.plainDecimal("inf") == nil)
        #expect(QuantityText.plainDecimal("2.5") == 2.5)
    }

    @Test func describesWithTheLargestWholeUnit() {
        #expect(TimeSpan(seconds: 604_800).description == "1w")
        #expect(TimeSpan(seconds: 86_400 * 3).description == "3d")
        #expect(TimeSpan(seconds: 5400).description == "90m")
        #expect(TimeSpan(seconds: 1.5).description == "1.5s")
    }
}
