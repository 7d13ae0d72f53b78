import Foundation
@testable import ImgCacheCore
import Testing

/// Every pixel of every fixture, decoded through the C libraries and compared
/// with what Pillow (an independent decoder) made of the same file.
@Suite struct DecoderTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/images")

    static func bytes(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: fixtures.appendingPathComponent(name)))
    }

    /// Rows of expected.tsv: name, format, width, height, frames, alpha, depth, rgba_md5.
    static func table() throws -> [[String]] {
        try String(contentsOf: fixtures.appendingPathComponent("expected.tsv"), encoding: .utf8)
            .split(separator: "\n").filter { !$0.hasPrefix("#") }.map { $0.split(separator: "\t").map(String.init) }
    }

    /// MD5 of RGBA pixels, fully transparent ones counted as (0, 0, 0, 0) as the expectations are.
    static func digest(_ pixels: ArraySlice<UInt8>) -> String {
        var normalised = Array(pixels)
        for index in stride(from: 0, to: normalised.count, by: 4) where normalised[index + 3] == 0 {
            normalised[index] = 0
            normalised[index + 1] = 0
            normalised[index + 2] = 0
        }
        return MD5.hexString(MD5.digest(normalised))
    }

    @Test func everyFixtureDecodesToPillowsPixels() throws {
        for row in try Self.table() {
            let image = try ImageDecoder.decode(try Self.bytes(row[0]))
            #expect(image.format.rawValue == row[1], "\(row[0])")
            #expect(image.width == Int(row[2]) && image.height == Int(row[3]), "\(row[0])")
            #expect(image.pixels.count == image.width * image.height * 4 * image.frameCount, "\(row[0])")
            #expect(Self.digest(image.frame(0)) == row[7], "\(row[0]) first frame")
            // Every frame of every animation, an APNG's too.
            #expect(image.frameCount == Int(row[4]), "\(row[0]) frames")
        }
    }

    @Test func animationsKeepTheirTimingAndLoops() throws {
        let gif = try ImageDecoder.decode(try Self.bytes("anim.gif"))
        #expect(gif.frameCount == 3 && gif.delays == [80, 80, 80] && gif.loopCount == 0)
        let webp = try ImageDecoder.decode(try Self.bytes("moving.webp"))
        #expect(webp.frameCount == 2 && webp.delays == [70, 70] && webp.loopCount == 0)
        // An APNG's frames composited as Pillow (and browsers) show them.
        let apng = try ImageDecoder.decode(try Self.bytes("apng.png"))
        #expect(apng.frameCount == 3 && apng.delays == [100, 100, 100] && apng.loopCount == 0)
        #expect((0..<3).map { Self.digest(apng.frame($0)) }
                == ["19e15509afef88b325d076eba126df47", "25d996c9a84a4922bf7265c9e80e71ac", "20d02e7c10a4887401247012718b9148"])
        let still = try ImageDecoder.decode(try Self.bytes("photo.jpg"))
        #expect(still.loopCount == nil && still.orientation == 1)
    }

    @Test(arguments: ["photo.jpg", "logo.png", "anim.gif", "sticker.webp", "lossless.webp", "moving.webp"])
    func truncatedFilesAreTypedErrors(name: String) throws {
        let whole = try Self.bytes(name)
        // Cut in the image data: past the header, short of the end.
        for cut in [whole.count * 2 / 3, whole.count - 3] {
            do {
                _ = try ImageDecoder.decode(Array(whole.prefix(cut)))
                Issue.record("\(name) cut at \(cut) of \(whole.count) decoded")
            } catch {
                guard case .corrupt = error else { Issue.record("\(name): \(error)"); continue }
            }
        }
    }

    @Test func theBombIsRefusedBeforeDecoding() throws {
        #expect(throws: ImageDecoder.DecodeError.tooManyPixels(width: 50_000, height: 50_000, limit: .standard)) {
            try ImageDecoder.decode(try Self.bytes("bomb.png"))
        }
        // Animation frames count against the limit too: 3 frames of 32x32 is 3072 pixels.
        #expect(throws: ImageDecoder.DecodeError.tooManyPixels(width: 32, height: 32, limit: PixelLimit(pixels: 2048), frames: 3)) {
            try ImageDecoder.decode(try Self.bytes("anim.gif"), maximumPixels: PixelLimit(pixels: 2048))
        }
    }

    @Test func exifOrientationIsRead() {
        // SOI, APP1 "Exif\0\0", a big-endian TIFF with one IFD entry: orientation 6.
        let tiff: [UInt8] = [0x4D, 0x4D, 0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, 6, 0, 0, 0, 0, 0, 0]
        let app1: [UInt8] = [0xFF, 0xE1, 0, UInt8(2 + 6 + tiff.count)] + Array("Exif".utf8) + [0, 0] + tiff
        #expect(ExifOrientation.read([0xFF, 0xD8] + app1 + [0xFF, 0xDA, 0, 2]) == 6)
        #expect(ExifOrientation.read([0xFF, 0xD8, 0xFF, 0xDA, 0, 2]) == nil)
    }
}
