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

/// Every format the codec registry writes, from every kind of source: frames kept exactly where the
/// format animates, alpha where it has alpha, plays as they were (an AVIF sequence loops), colours
/// close. The registry drives the table: a format added to it joins the sweep.
@Suite struct WrittenFormatsSweepTests {
    /// Sources: a still photo, a still with transparency, a 3-frame animation that plays twice, a 16-bit grey.
    static func sources() throws -> [(name: String, image: DecodedImage)] {
        var frames: [UInt8] = []
        for index in 0..<3 {
            for y in 0..<16 {
                for x in 0..<16 {
                    // Opaque where x < 12, clear beyond: each frame another colour.
                    frames += x < 12 ? [UInt8(60 * index + 40), UInt8(y * 12), UInt8(x * 15), 255] : [0, 0, 0, 0]
                }
            }
        }
        let animation = DecodedImage(format: .gif, width: 16, height: 16, frameCount: 3, pixels: frames, delays: [100, 200, 300],
                                     loopCount: 2, orientation: 1)
        return [("photo.jpg", try ImageDecoder.decode(try DecoderTests.bytes("photo.jpg"))), ("logo.png", try ImageDecoder.decode(try DecoderTests.bytes("logo.png"))),
                ("animation", animation), ("gray16.png", try ImageDecoder.decode(try DecoderTests.bytes("gray16.png")))]
    }

    /// An AVIF sequence carries no time of writing: the same frames make the same bytes whenever they
    /// are encoded (a rebuilt site's copies stay untouched, a data set's hashes stay).
    @Test func anAVIFSequenceIsTheSameBytesWhenItWasWritten() throws {
        let frames = [UInt8](repeating: 200, count: 16 * 16 * 4) + [UInt8](repeating: 90, count: 16 * 16 * 4)
        let source = DecodedImage(format: .gif, width: 16, height: 16, frameCount: 2, pixels: frames, delays: [100, 100],
                                  loopCount: 0, orientation: 1)
        let bytes = try ImageTransform(format: .avif).apply(to: source).bytes
        let file = ISOMediaFile(bytes: bytes)
        let moov = try #require(file.boxes(in: 0..<bytes.count).boxes.first { $0.type == "moov" })
        let mvhd = try #require(file.children(of: moov).first { $0.type == "mvhd" })
        #expect(bytes[mvhd.contentStart + 4..<mvhd.contentStart + 12].allSatisfy { $0 == 0 })
        let trak = try #require(file.children(of: moov).first { $0.type == "trak" })
        let tkhd = try #require(file.children(of: trak).first { $0.type == "tkhd" })
        #expect(bytes[tkhd.contentStart + 4..<tkhd.contentStart + 12].allSatisfy { $0 == 0 })
        #expect(try ImageDecoder.decode(bytes).frameCount == 2)
    }

    /// An animation with an EXIF orientation (a WebP or PNG may carry one) is turned upright in every
    /// frame it keeps, as a still is: the stored top-left pixel of orientation 6 lands top-right.
    @Test(arguments: CodecRegistry.animatedFormats)
    func anAnimationIsTurnedUprightInEveryFrame(format: ImageFormat) throws {
        // Red, with a blue quarter at the stored top-left; the second frame a darker red (not merged).
        let (width, height) = (32, 16)
        func frame(red: UInt8) -> [UInt8] {
            (0..<width * height).flatMap { pixel -> [UInt8] in
                pixel % width < width / 2 && pixel / width < height / 2 ? [0, 0, 255, 255] : [red, 0, 0, 255]
            }
        }
        let source = DecodedImage(format: .webp, width: width, height: height, frameCount: 2, pixels: frame(red: 255) + frame(red: 160),
                                  delays: [100, 200], loopCount: 0, orientation: 6)
        let output = try ImageTransform(format: format).apply(to: source)
        let again = try ImageDecoder.decode(output.bytes)
        #expect((output.width, output.height) == (height, width) && (again.width, again.height) == (height, width), "\(format)")
        #expect(again.frameCount == 2 && again.orientation <= 1, "\(format)")
        for index in 0..<again.frameCount {
            let pixels = Array(again.frame(index))
            let topRight = (again.width * 1 + again.width - 2) * 4
            #expect(pixels[topRight + 2] > 200 && pixels[topRight] < 60, "\(format) frame \(index): \(pixels[topRight..<topRight + 4])")
        }
    }

    /// Every EXIF orientation (1-8) turns an animation's frames as it turns a still (the model:
    /// `ImageOrientation.apply` of the stored frame): the blue quarter lands in the same corner.
    @Test(arguments: 1...8)
    func everyOrientationTurnsAnAnimationAsAStill(orientation: Int) throws {
        let (width, height) = (32, 16)
        func frame(red: UInt8) -> [UInt8] {
            (0..<width * height).flatMap { pixel -> [UInt8] in
                pixel % width < width / 2 && pixel / width < height / 2 ? [0, 0, 255, 255] : [red, 0, 0, 255]
            }
        }
        let expected = ImageOrientation.apply(frame(red: 255)[...], width: width, height: height, orientation: orientation)
        let source = DecodedImage(format: .webp, width: width, height: height, frameCount: 2, pixels: frame(red: 255) + frame(red: 160),
                                  delays: [100, 200], loopCount: 0, orientation: orientation)
        let again = try ImageDecoder.decode(try ImageTransform(format: .gif).apply(to: source).bytes)
        #expect((again.width, again.height) == (expected.width, expected.height) && again.frameCount == 2, "\(orientation)")
        // The centre of each quarter: blue where the model has it, red elsewhere, in every frame.
        for index in 0..<again.frameCount {
            let pixels = Array(again.frame(index))
            for (x, y) in [(1, 1), (3, 1), (1, 3), (3, 3)].map({ ($0.0 * expected.width / 4, $0.1 * expected.height / 4) }) {
                let at = (y * expected.width + x) * 4
                #expect((pixels[at + 2] > 128) == (expected.pixels[at + 2] > 128), "orientation \(orientation) frame \(index) at \(x),\(y)")
            }
        }
    }

    /// An encoder may merge identical frames (libwebp makes one longer frame): the output says the
    /// frames it holds, not the source's.
    @Test(arguments: CodecRegistry.animatedFormats)
    func identicalFramesAreCountedAsWritten(format: ImageFormat) throws {
        let still = [UInt8](repeating: 200, count: 8 * 8 * 4)
        let source = DecodedImage(format: .gif, width: 8, height: 8, frameCount: 20, pixels: Array((0..<20).map { _ in still }.joined()),
                                  delays: Array(repeating: 100, count: 20), loopCount: 0, orientation: 1)
        let output = try ImageTransform(format: format).apply(to: source)
        #expect(output.frameCount == (try ImageHeader.probe(output.bytes)).frameCount, "\(format): \(output.frameCount)")
    }

    @Test(arguments: CodecRegistry.writableFormats)
    func everyWrittenFormatKeepsWhatItCan(format: ImageFormat) throws {
        let capabilities = CodecRegistry.codec(for: format).capabilities
        for (name, source) in try Self.sources() {
            let output = try ImageTransform(format: format).apply(to: source)
            let again = try ImageDecoder.decode(output.bytes)
            #expect(again.format == format, "\(name) as \(format)")
            let animates = source.frameCount > 1 && capabilities.contains(.animation)
            #expect(again.frameCount == (animates ? source.frameCount : 1) && output.frameCount == again.frameCount,
                    "\(name) as \(format): \(again.frameCount) frames")
            if animates {
                #expect(again.delays == source.delays, "\(name) as \(format): \(again.delays)")
                // Plays kept where the format says how many; an AVIF sequence always loops.
                #expect(again.loopCount == (format == .avif ? 0 : source.loopCount), "\(name) as \(format): \(String(describing: again.loopCount))")
            }
            for index in 0..<again.frameCount {
                let before = source.frame(index), after = again.frame(index)
                var colourError = 0, colourCount = 0, alphaWrong = 0
                for pixel in stride(from: 0, to: before.count, by: 4) {
                    let a = before[before.startIndex + pixel + 3], b = after[after.startIndex + pixel + 3]
                    // Alpha kept where the format has it (a GIF's is all or nothing, from half way); flattened opaque where it has not.
                    let expected = !capabilities.contains(.alpha) ? 255 : format == .gif ? (a >= 128 ? 255 : 0) : Int(a)
                    if abs(expected - Int(b)) > 8 { alphaWrong += 1 }
                    guard a == 255, b == 255 else { continue }
                    for channel in 0..<3 {
                        colourError += abs(Int(before[before.startIndex + pixel + channel]) - Int(after[after.startIndex + pixel + channel]))
                        colourCount += 1
                    }
                }
                #expect(alphaWrong == 0, "\(name) as \(format), frame \(index): \(alphaWrong) pixels' alpha")
                // Lossy formats at the default quality stay within a few levels on average (a GIF's palette a few more).
                let limit = format == .gif ? 12.0 : 8.0
                #expect(Double(colourError) / Double(max(1, colourCount)) < limit,
                        "\(name) as \(format), frame \(index): mean error \(Double(colourError) / Double(max(1, colourCount)))")
            }
        }
    }
}

/// An animation keeps its transparency in every format written, as another reader sees it: Pillow
/// (which takes a GIF's mode from its first frame, and a WebP's from its VP8X alpha flag) reads every
/// frame back. Swept over where the clear pixels are: only in a later frame (the first opaque), only
/// in the first, in every frame.
@Suite struct AnimationTransparencyTests {
    /// Frames of 16x16: a square that is opaque in every frame, and a strip clear in the frames `clear` names.
    static func frames(count: Int, clear: Set<Int>) -> [UInt8] {
        var pixels: [UInt8] = []
        for index in 0..<count {
            for y in 0..<16 {
                for x in 0..<16 {
                    pixels += clear.contains(index) && x >= 10 ? [0, 0, 0, 0] : [UInt8(200 - 60 * index), UInt8(y * 10), UInt8(x * 12), 255]
                }
            }
        }
        return pixels
    }

    /// Pillow's alpha at (2, 8) and (13, 8) in each frame of `bytes`.
    static func pillowAlpha(_ bytes: [UInt8]) throws -> [[Int]] {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("animation-\(UUID().uuidString)")
        try Data(bytes).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let script = """
            import json, sys
            from PIL import Image, ImageSequence
            with Image.open(sys.argv[1]) as image:
                print(json.dumps([[frame.convert("RGBA").getpixel(at)[3] for at in ((2, 8), (13, 8))] for frame in ImageSequence.Iterator(image)]))
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, file.path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return try #require(try JSONSerialization.jsonObject(with: data) as? [[Int]], "\(String(decoding: data, as: UTF8.self))")
    }

    @Test(arguments: CodecRegistry.animatedFormats)
    func everyFrameKeepsItsTransparencyAsPillowReadsIt(format: ImageFormat) throws {
        for clear in [Set([1]), Set([2]), Set([0]), Set([0, 1, 2])] {
            let source = DecodedImage(format: .png, width: 16, height: 16, frameCount: 3, pixels: Self.frames(count: 3, clear: clear),
                                      delays: [100, 100, 100], loopCount: 0, orientation: 1)
            let written = try ImageTransform(format: format).apply(to: source).bytes
            let alpha = try Self.pillowAlpha(written)
            #expect(alpha.count == 3, "\(format), clear in \(clear.sorted()): \(alpha)")
            for (index, frame) in alpha.enumerated() {
                #expect(frame == [255, clear.contains(index) ? 0 : 255], "\(format), clear in \(clear.sorted()), frame \(index): \(frame)")
            }
        }
    }
}
