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
