import Foundation
@testable import ImgCacheCore
import Testing

@Suite struct ResizerTests {
    @Test func fitsInsideTheBoxKeepingTheAspectAndNeverUpscales() {
        #expect(ImageResizer.fittedSize(width: 1000, height: 500, boxWidth: 256, boxHeight: 256) == (256, 128))
        #expect(ImageResizer.fittedSize(width: 50, height: 1000, boxWidth: 256, boxHeight: 256) == (13, 256))
        #expect(ImageResizer.fittedSize(width: 100, height: 50, boxWidth: 256, boxHeight: 256) == (100, 50))
        #expect(ImageResizer.fittedSize(width: 300, height: 200, boxWidth: 150, boxHeight: 1000) == (150, 100))
        #expect(ImageResizer.fittedSize(width: 5000, height: 1, boxWidth: 100, boxHeight: 100) == (100, 1))
    }

    func gray(_ values: [UInt8]) -> ArraySlice<UInt8> {
        values.flatMap { [$0, $0, $0, 255] }[...]
    }

    @Test func averagesTheAreaEachOutputPixelCovers() {
        // Halving: pairs averaged.
        #expect(ImageResizer.resize(gray([0, 255, 0, 255]), width: 4, height: 1, toWidth: 2, toHeight: 1)
            == [128, 128, 128, 255, 128, 128, 128, 255])
        // 3 to 2: each output covers one and a half sources.
        #expect(ImageResizer.resize(gray([0, 90, 180]), width: 3, height: 1, toWidth: 2, toHeight: 1)
            == [30, 30, 30, 255, 150, 150, 150, 255])
        // Vertically the same.
        #expect(ImageResizer.resize(gray([0, 90, 180]), width: 1, height: 3, toWidth: 1, toHeight: 2)
            == [30, 30, 30, 255, 150, 150, 150, 255])
    }

    @Test func transparentPixelsDoNotBleedTheirColour() {
        let pixels: [UInt8] = [255, 0, 0, 255, 0, 255, 0, 0]
        #expect(ImageResizer.resize(pixels[...], width: 2, height: 1, toWidth: 1, toHeight: 1) == [255, 0, 0, 128])
        #expect(ImageResizer.resize([0, 255, 0, 0, 0, 0, 255, 0][...], width: 2, height: 1, toWidth: 1, toHeight: 1) == [0, 0, 0, 0])
    }
}
