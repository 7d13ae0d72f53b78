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

    /// A sharp edge at a non-integer ratio stays where exact coverage weighting puts it, through the
    /// whole thumbnail path (a PNG's reduced decode included): a half-red 64-pixel row shrunk to 10
    /// is five red pixels and five blue, none mixed (32 source pixels are exactly 5 output pixels).
    @Test func anEdgeIsWhereCoverageWeightingPutsItThroughTheWholeThumbnailPath() throws {
        var rows: [UInt8] = []
        for _ in 0..<8 { for x in 0..<64 { rows += x < 32 ? [255, 0, 0, 255] : [0, 0, 255, 255] } }
        let png = try ImageEncoder.encode(rows[...], width: 64, height: 8, settings: ImageEncoder.Settings(format: .png))
        let header = try ImageHeader.probe(png)
        let transform = ImageTransform(thumbnail: ImageTransform.BoxSize(width: 10, height: nil), format: .png)
        let decoded = try ImageTransform.decodeSource(png, header: header, for: [transform], maximumPixels: .standard)
        let output = try transform.apply(to: decoded, shown: ImageTransform.shownSize(of: header))
        let thumbnail = try ImageDecoder.decode(output.bytes)
        #expect(thumbnail.width == 10)
        let reds = (0..<10).map { Int(thumbnail.pixels[$0 * 4]) }
        #expect(reds == [255, 255, 255, 255, 255, 0, 0, 0, 0, 0], "\(reds)")
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
        let hasAlpha = try ImageHeader.probe(bytes).hasAlpha
        if name.hasSuffix(".png") || (name.hasSuffix(".webp") && hasAlpha) {
            // A PNG this small is decoded whole, so that area averaging weighs every pixel exactly; so is
            // a WebP with alpha (libwebp's scaler weighs pixels across an edge of alpha).
            #expect(reduced.width == whole.width && reduced.height == whole.height, "\(name) was reduced")
        } else {
            #expect(reduced.width < whole.width && reduced.height < whole.height, "\(name) was not reduced")
        }
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

    /// A PNG over 4 megapixels has its rows shrunk as they are read, by a whole factor at most half
    /// the reduction asked, so that its pixels are never all in memory.
    @Test func aLargePNGsRowsAreShrunkAsTheyAreRead() throws {
        let width = 2100, height = 2050
        let rows = [UInt8](repeating: 90, count: width * height * 4)
        let png = try ImageEncoder.encode(rows[...], width: width, height: height, settings: ImageEncoder.Settings(format: .png))
        let reduced = try ImageDecoder.decode(png, atLeast: (256, 250))
        #expect(reduced.width <= width / 4 && reduced.width >= 512 && reduced.height >= 500, "\(reduced.width)x\(reduced.height)")
    }
}
