@testable import ImgCacheCore
import Testing

@Suite struct PixelLimitTests {
    @Test func allowsUpToTheLimitWithoutOverflow() {
        let limit = PixelLimit.standard
        #expect(limit.allows(width: 10_000, height: 10_000))
        #expect(!limit.allows(width: 10_000, height: 10_001))
        #expect(!limit.allows(width: 50_000, height: 50_000))
        #expect(!limit.allows(width: Int.max, height: 2))
    }

    @Test func saysItsSizeInMegapixels() {
        #expect(PixelLimit.standard.description == "100 megapixels")
        #expect(PixelLimit(pixels: 2_500_000).description == "2.5 megapixels")
        #expect(PixelLimit(pixels: 40_000).description == "40000 pixels")
        // Just over a limit does not read as the limit.
        #expect(PixelLimit(pixels: 100_040_000).description == "100.04 megapixels")
        #expect(PixelLimit(pixels: 1_005_000).description == "1.01 megapixels")
        #expect(PixelLimit(pixels: 15_728_640).description == "15.73 megapixels")
    }
}
