import Foundation
@testable import ImgCacheCore
import Testing

@Suite struct ResizerTests {
    @Test func fitsInsideTheBoxKeepingTheAspectAndNeverUpscales() {
        func fitted(_ width: Int, _ height: Int, box: (Int, Int)) -> (Int, Int) {
            let transform = ImageTransform(thumbnail: ImageTransform.BoxSize(width: box.0, height: box.1))
            let size = transform.layout(width: width, height: height).canvas
            return (size.width, size.height)
        }
        #expect(fitted(1000, 500, box: (256, 256)) == (256, 128))
        #expect(fitted(50, 1000, box: (256, 256)) == (13, 256))
        #expect(fitted(100, 50, box: (256, 256)) == (100, 50))
        #expect(fitted(300, 200, box: (150, 1000)) == (150, 100))
        #expect(fitted(5000, 1, box: (100, 100)) == (100, 1))
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

/// Decoding smaller where the format allows (JPEG's DCT scaling, PNG's rows
/// shrunk as they are read, libwebp's scaled decoding): never smaller than
/// asked, and the same picture as decoding whole and shrinking.
@Suite struct ReducedDecodeTests {
    @Test(arguments: ["photo.jpg", "progressive.jpg", "cmyk.jpg", "logo.png", "palette.png", "gray16.png", "alpha.webp", "lossless.webp"])
    func aReducedDecodeIsTheWholeDecodeShrunk(name: String) throws {
        let bytes = [UInt8](try Data(contentsOf: DecoderTests.fixtures.appendingPathComponent(name)))
        let whole = try ImageDecoder.decode(bytes)
        let asked = (width: max(1, whole.width / 4), height: max(1, whole.height / 4))
        let reduced = try ImageDecoder.decode(bytes, atLeast: asked)
        #expect(reduced.width >= asked.width && reduced.height >= asked.height, "\(reduced.width)x\(reduced.height)")
        #expect(reduced.width < whole.width && reduced.height < whole.height, "\(name) was not reduced")
        #expect(reduced.colour == whole.colour)
        let a = ImageResizer.resize(whole.frame(0), width: whole.width, height: whole.height, toWidth: asked.width, toHeight: asked.height)
        let b = ImageResizer.resize(reduced.frame(0), width: reduced.width, height: reduced.height,
                                    toWidth: asked.width, toHeight: asked.height)
        // Opaque pixels compared by colour; alpha everywhere.
        var total = 0, count = 0
        for pixel in stride(from: 0, to: a.count, by: 4) {
            let channels = a[pixel + 3] == 255 && b[pixel + 3] == 255 ? 0..<4 : 3..<4
            for channel in channels {
                total += abs(Int(a[pixel + channel]) - Int(b[pixel + channel]))
                count += 1
            }
        }
        #expect(Double(total) / Double(max(1, count)) < 6, "\(name): mean difference \(Double(total) / Double(max(1, count)))")
    }
}
