import Foundation
@testable import ImgCacheCore
import Testing

/// Encoders round trip through the decoders; the resizer averages areas exactly.
@Suite struct EncoderTests {
    func decoded(_ name: String) throws -> DecodedImage {
        try ImageDecoder.decode(try DecoderTests.bytes(name))
    }

    func meanDifference(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>) -> Double {
        Double(zip(a, b).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }) / Double(a.count)
    }

    @Test func losslessFormatsRoundTripExactly() throws {
        let source = try decoded("logo.png")
        for settings in [ImageEncoder.Settings(format: .png), ImageEncoder.Settings(format: .webp, lossless: true)] {
            let bytes = try ImageEncoder.encode(source.frame(0), width: source.width, height: source.height, settings: settings)
            let again = try ImageDecoder.decode(bytes)
            #expect(again.format == settings.format)
            #expect(again.width == source.width && again.height == source.height)
            #expect(DecoderTests.digest(again.frame(0)) == DecoderTests.digest(source.frame(0)), "\(settings.format)")
        }
    }

    @Test func lossyFormatsStayClose() throws {
        let source = try decoded("photo.jpg")
        for format in [ImageFormat.jpeg, .webp] {
            let bytes = try ImageEncoder.encode(source.frame(0), width: source.width, height: source.height,
                                                settings: ImageEncoder.Settings(format: format, quality: 90))
            let again = try ImageDecoder.decode(bytes)
            #expect(again.format == format && again.width == 96 && again.height == 64)
            #expect(meanDifference(again.frame(0), source.frame(0)) < 6, "\(format)")
        }
        // Quality changes the size.
        let low = try ImageEncoder.encode(source.frame(0), width: 96, height: 64, settings: ImageEncoder.Settings(format: .jpeg, quality: 10))
        let high = try ImageEncoder.encode(source.frame(0), width: 96, height: 64, settings: ImageEncoder.Settings(format: .jpeg, quality: 95))
        #expect(low.count < high.count)
    }

    @Test func formatsImgcacheDoesNotWriteAreRefused() {
        #expect(throws: ImageEncoder.EncodeError.unsupported(.gif)) {
            try ImageEncoder.encode([0, 0, 0, 255][...], width: 1, height: 1, settings: ImageEncoder.Settings(format: .gif))
        }
    }
}

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

@Suite struct OrientationTests {
    /// A 3x2 image whose pixels are numbered 1...6 in their red channel.
    let pixels: [UInt8] = (1...6).flatMap { [UInt8($0), 0, 0, 255] }

    func reds(_ result: (pixels: [UInt8], width: Int, height: Int)) -> [UInt8] {
        stride(from: 0, to: result.pixels.count, by: 4).map { result.pixels[$0] }
    }

    @Test func everyOrientationTurnsTheImageUpright() {
        // 1 2 3
        // 4 5 6
        let expected: [Int: (Int, Int, [UInt8])] = [
            1: (3, 2, [1, 2, 3, 4, 5, 6]), 2: (3, 2, [3, 2, 1, 6, 5, 4]), 3: (3, 2, [6, 5, 4, 3, 2, 1]),
            4: (3, 2, [4, 5, 6, 1, 2, 3]), 5: (2, 3, [1, 4, 2, 5, 3, 6]), 6: (2, 3, [4, 1, 5, 2, 6, 3]),
            7: (2, 3, [6, 3, 5, 2, 4, 1]), 8: (2, 3, [3, 6, 2, 5, 1, 4]),
        ]
        for (orientation, (width, height, order)) in expected {
            let result = ImageOrientation.apply(pixels[...], width: 3, height: 2, orientation: orientation)
            #expect(result.width == width && result.height == height, "\(orientation)")
            #expect(reds(result) == order, "\(orientation)")
        }
    }
}
