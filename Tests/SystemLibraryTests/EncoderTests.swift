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

    @Test func aGIFOfFewColoursKeepsThemExactly() throws {
        // Pure red, green and blue frames, and one of 200 greys: each fits a palette as it is.
        let size = 10 * 10
        let solid: [[UInt8]] = [[255, 0, 0, 255], [0, 255, 0, 255], [0, 0, 255, 255]]
        var frames = solid.flatMap { pixel in (0..<size).flatMap { _ in pixel } }
        frames += (0..<size).flatMap { index -> [UInt8] in let grey = UInt8(index * 2); return [grey, grey, grey, 255] }
        let bytes = try ImageEncoder.encodeAnimation(frames, width: 10, height: 10, frameCount: 4, delays: [100, 100, 100, 100],
                                                     loopCount: 0, settings: ImageEncoder.Settings(format: .gif))
        let again = try ImageDecoder.decode(bytes)
        #expect(again.frameCount == 4)
        for index in 0..<4 {
            #expect(Array(again.frame(index)) == Array(frames[index * size * 4..<(index + 1) * size * 4]), "frame \(index)")
        }
    }

    /// A GIF counts repeats after the first play, WebP and APNG count plays: an animation that plays
    /// four times says 3 in GIF and 4 in WebP, whichever it was made from.
    @Test func anAnimationPlaysAsOftenInEveryFormat() throws {
        let frames = [UInt8](repeating: 200, count: 4 * 4 * 4) + [UInt8](repeating: 20, count: 4 * 4 * 4)
        for plays in [0, 1, 2, 4] {
            let gif = try ImageEncoder.encodeAnimation(frames, width: 4, height: 4, frameCount: 2, delays: [100, 100], loopCount: plays,
                                                       settings: ImageEncoder.Settings(format: .gif))
            // The NETSCAPE2.0 block's count, as browsers read it.
            let netscape = try #require(Array(gif).firstRange(of: Array("NETSCAPE2.0".utf8)).map { $0.upperBound } ?? (plays == 1 ? -1 : nil))
            if plays == 1 {
                #expect(netscape == -1, "a GIF played once has no loop extension")
            } else {
                #expect(Int(gif[netscape + 2]) | Int(gif[netscape + 3]) << 8 == max(0, plays - 1), "\(plays) plays")
            }
            let webp = try ImageEncoder.encodeAnimation(frames, width: 4, height: 4, frameCount: 2, delays: [100, 100], loopCount: plays,
                                                        settings: ImageEncoder.Settings(format: .webp))
            for bytes in [gif, webp] {
                #expect(try ImageDecoder.decode(bytes).loopCount == plays, "\(plays) plays")
            }
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
        #expect(throws: ImageEncoder.EncodeError.unsupported(.tiff)) {
            try ImageEncoder.encode([0, 0, 0, 255][...], width: 1, height: 1, settings: ImageEncoder.Settings(format: .tiff))
        }
    }
}
