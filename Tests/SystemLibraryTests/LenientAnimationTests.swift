import Foundation
@testable import ImgCacheCore
import Testing

/// Animations that break a rule browsers forgive are shown as browsers show them, not refused: an
/// APNG with an empty `fdAT` or an `fcTL` repeated before its data (the frames present), one whose
/// `acTL` miscounts its frames (its default image, as Chromium shows it); a GIF with an unknown
/// block after a frame. Two GIF loop counts: the
/// first holds. What is still refused is in CONFORMANCE.md.
@Suite struct LenientAnimationTests {
    typealias Chunk = (type: String, data: [UInt8])

    static func chunks(_ bytes: [UInt8]) -> [Chunk] {
        var found: [Chunk] = []
        var offset = 8
        while offset + 12 <= bytes.count {
            let length = Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            found.append((String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self), Array(bytes[offset + 8..<offset + 8 + length])))
            offset += 12 + length
        }
        return found
    }

    static func png(_ chunks: [Chunk]) -> [UInt8] {
        var bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        for chunk in chunks {
            let count = chunk.data.count
            bytes += [UInt8(count >> 24 & 0xFF), UInt8(count >> 16 & 0xFF), UInt8(count >> 8 & 0xFF), UInt8(count & 0xFF)]
            let body = Array(chunk.type.utf8) + chunk.data
            let crc = CRC32.checksum(body[...])
            bytes += body + [UInt8(crc >> 24 & 0xFF), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc & 0xFF)]
        }
        return bytes
    }

    /// The fixture's three frames (IDAT, then two fdAT), with `change` applied to its chunks.
    static func apng(_ change: (inout [Chunk]) -> Void) throws -> [UInt8] {
        var chunks = Self.chunks(try DecoderTests.bytes("apng.png"))
        change(&chunks)
        return png(chunks)
    }

    static func announcing(_ frames: UInt8) -> (inout [Chunk]) -> Void {
        { chunks in
            let at = chunks.firstIndex { $0.type == "acTL" }!
            chunks[at].data[0...3] = [0, 0, 0, frames]
        }
    }

    @Test func anAPNGIsShownWithTheFramesPresent() throws {
        let original = try ImageDecoder.decode(try DecoderTests.bytes("apng.png"))
        let cases: [(String, (inout [Chunk]) -> Void)] = [
            ("an empty fdAT", { chunks in
                let at = chunks.firstIndex { $0.type == "fdAT" }!
                chunks.insert(("fdAT", [0, 0, 0, 9]), at: at + 1)
                chunks.insert(("fdAT", []), at: at + 1)
            }),
            ("an fcTL repeated", { chunks in
                let at = chunks.lastIndex { $0.type == "fcTL" }!
                chunks.insert(chunks[at], at: at)
                chunks[at].data[3] = 2
            }),
        ]
        for (name, change) in cases {
            let bytes = try Self.apng(change)
            #expect(ImageHeader.missingEnd(of: bytes, format: .png) == nil, "\(name)")
            #expect(try ImageHeader.probe(bytes).frameCount == 3, "\(name)")
            let decoded = try ImageDecoder.decode(bytes)
            #expect(decoded.frameCount == 3 && decoded.delays == original.delays, "\(name): \(decoded.frameCount) frames")
            #expect(Array(decoded.pixels) == Array(original.pixels), "\(name)")
        }
    }

    /// A PNG that breaks the APNG rules in a way that makes it a still to browsers (its `acTL` after
    /// the image data, two of them, no frame at all, or a count other than its frames) is its default image in every output, not
    /// refused and not the frames after it.
    @Test func aPNGWhoseAnimationBrowsersIgnoreIsItsDefaultImage() throws {
        let still = try ImageDecoder.decode(Self.png(Self.chunks(try DecoderTests.bytes("apng.png")).filter {
            !["acTL", "fcTL", "fdAT"].contains($0.type)
        }))
        let cases: [(String, (inout [Chunk]) -> Void)] = [
            ("acTL after the image data", { chunks in
                let control = chunks.remove(at: chunks.firstIndex { $0.type == "acTL" }!)
                chunks.insert(control, at: chunks.firstIndex { $0.type == "IDAT" }! + 1)
            }),
            ("two acTL", { chunks in
                let at = chunks.firstIndex { $0.type == "acTL" }!
                chunks.insert(chunks[at], at: at)
            }),
            ("acTL without any fcTL", { chunks in chunks.removeAll { $0.type == "fcTL" || $0.type == "fdAT" } }),
            // Chromium plays no APNG whose acTL miscounts its frames: it shows the default image.
            ("acTL announcing more", Self.announcing(10)),
            ("acTL announcing fewer", Self.announcing(1)),
            ("acTL announcing none", Self.announcing(0)),
        ]
        for (name, change) in cases {
            let bytes = try Self.apng(change)
            #expect((try ImageHeader.probe(bytes).frameCount ?? 1) == 1, "\(name)")
            let decoded = try ImageDecoder.decode(bytes)
            #expect(decoded.frameCount == 1, "\(name): \(decoded.frameCount) frames")
            #expect(Array(decoded.pixels) == Array(still.pixels), "\(name)")
        }
    }

    @Test func anAPNGWhoseFramesContradictTheCanvasOrTheirOrderIsStillRefused() throws {
        let outOfOrder = try Self.apng { chunks in
            let at = chunks.lastIndex { $0.type == "fcTL" }!
            chunks[at].data[0...3] = [0, 0, 0, 0]
        }
        #expect(throws: ImageDecoder.DecodeError.corrupt(.png, "its frames' sequence numbers are out of order")) {
            try ImageDecoder.decode(outOfOrder)
        }
    }

    /// GIF blocks: (offset of the trailer) an unknown block inserted there ends the animation after its frames.
    @Test func aGIFWithAnUnknownBlockAfterAFrameShowsTheFramesBeforeIt() throws {
        let gif = try DecoderTests.bytes("anim.gif")
        let original = try ImageDecoder.decode(gif)
        let odd = Array(gif.dropLast()) + [0x99, 0x01, 0x02, 0x00, 0x3B]
        #expect(try ImageHeader.probe(odd).frameCount == original.frameCount)
        let decoded = try ImageDecoder.decode(odd)
        #expect(decoded.frameCount == original.frameCount && Array(decoded.pixels) == Array(original.pixels))
        // Before any frame it is no GIF imgcache can read.
        let first = try #require(Array(gif).firstIndex(of: 0x21))
        #expect(throws: (any Error).self) { try ImageHeader.probe(Array(gif[..<first]) + [0x99, 0x00, 0x3B]) }
    }

    @Test func aGIFWithTwoLoopCountsPlaysAsTheFirstSays() throws {
        let gif = try DecoderTests.bytes("anim.gif")
        let netscape = try #require(Array(gif).firstRange(of: Array("NETSCAPE2.0".utf8)))
        // Application extension: 21 FF 0B "NETSCAPE2.0" 03 01 LO HI 00.
        let start = netscape.lowerBound - 3
        let block = Array(gif[start..<netscape.upperBound + 5])
        func loop(_ repeats: UInt8) -> [UInt8] { var copy = block; copy[copy.count - 3] = repeats; copy[copy.count - 2] = 0; return copy }
        let twice = Array(gif[..<start]) + loop(2) + loop(7) + Array(gif[(netscape.upperBound + 5)...])
        #expect(try ImageDecoder.decode(twice).loopCount == 3)
    }

    /// A frame shown for 10 ms or less (0 in a GIF made to flash) is 100 ms in every format written, as browsers play it;
    /// one a little longer stays short (a GIF's centiseconds: 11 to 14 ms become 20, never the 10 that plays as 100).
    @Test(arguments: CodecRegistry.animatedFormats)
    func aZeroDelayIsWrittenAsBrowsersPlayIt(format: ImageFormat) throws {
        let shades: [UInt8] = [200, 40, 120, 90, 160]
        let frames = shades.flatMap { [UInt8](repeating: $0, count: 8 * 8 * 4) }
        let source = DecodedImage(format: .gif, width: 8, height: 8, frameCount: 5, pixels: frames, delays: [0, 10, 70, 11, 14],
                                  loopCount: 0, orientation: 1)
        let again = try ImageDecoder.decode(try ImageTransform(format: format).apply(to: source).bytes)
        #expect(again.delays == (format == .gif ? [100, 100, 70, 20, 20] : [100, 100, 70, 11, 14]), "\(format): \(again.delays)")
    }
}

/// A header that lies about the size (a HEIC's `ispe` box claiming more than its pixels): `--verify
/// full` and a thumbnail refuse it, rather than store or scale it at the size it claims. (libavif
/// gives an AVIF's pixels the size its `ispe` claims, so an AVIF's lie is not seen this way.)
@Suite struct LyingHeaderTests {
    /// `bytes` with every `ispe` box saying `width` x `height`.
    static func claiming(_ bytes: [UInt8], width: UInt32, height: UInt32) -> [UInt8] {
        var patched = bytes
        let tag = Array("ispe".utf8)
        var index = 4
        while index + 16 <= patched.count {
            if Array(patched[index..<index + 4]) == tag {
                for (offset, value) in [(8, width), (12, height)] {
                    for byte in 0..<4 { patched[index + offset + byte] = UInt8(truncatingIfNeeded: value >> (24 - 8 * byte)) }
                }
            }
            index += 1
        }
        return patched
    }

    @Test(arguments: ["formats/still.heic", "formats/alpha.heic"])
    func aSizeTheHeaderClaimsAndThePixelsDoNotHaveIsRefused(name: String) throws {
        let original = try DecoderTests.bytes(name)
        let header = try ImageHeader.probe(original)
        let lying = Self.claiming(original, width: UInt32(header.width * 3), height: UInt32(header.height * 3))
        let claimed = try ImageHeader.probe(lying)
        guard claimed.width == header.width * 3 else { return }  // a decoder that takes the size from elsewhere
        let expected = "not the \(claimed.width)×\(claimed.height) its header says"
        for work in [DecodeJob.Work.verify, .variants([ImageTransform(thumbnail: .init(width: 20, height: nil), format: .png)])] {
            let result = DecodeJob(work: work, maximumPixels: .standard).perform(on: lying) { _ in }
            guard case .failure(.decode(.corrupt(_, let reason))) = result else {
                Issue.record("\(name) \(work): \(result)")
                continue
            }
            #expect(reason.contains(expected), "\(name): \(reason)")
        }
        // The true header passes.
        guard case .success = DecodeJob(work: .verify, maximumPixels: .standard).perform(on: original, phase: { _ in }) else {
            Issue.record("\(name): the original is refused")
            return
        }
    }
}

/// An APNG's eXIf orientation turns every frame, as a still PNG's turns its picture: the size as
/// shown, the stills and the animations made of it are upright.
@Suite struct AnimatedPNGOrientationTests {
    /// A TIFF block with one orientation tag, as an eXIf chunk holds it.
    static func exif(_ orientation: UInt8) -> [UInt8] {
        Array("MM".utf8) + [0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, orientation, 0, 0, 0, 0, 0, 0]
    }

    @Test func everyFrameIsTurnedUpright() throws {
        let original = try DecoderTests.bytes("apng.png")  // 20x10, 3 frames
        let turned = try LenientAnimationTests.apng { chunks in
            chunks.insert(("eXIf", Self.exif(6)), at: chunks.firstIndex { $0.type == "IDAT" }!)
        }
        let header = try ImageHeader.probe(turned)
        #expect(header.orientation == 6 && header.uprightSize == (10, 20))
        let plain = try ImageDecoder.decode(original)
        for format in [ImageFormat.png, .webp, .gif] {
            let job = DecodeJob(work: .variants([ImageTransform(thumbnail: nil, format: format)]), maximumPixels: .standard)
            guard case .success(let result) = job.perform(on: turned, phase: { _ in }), let output = result.outputs.first else {
                Issue.record("\(format): no variant")
                continue
            }
            let made = try ImageDecoder.decode(output.bytes)
            #expect(made.width == 10 && made.height == 20, "\(format): \(made.width)x\(made.height)")
            #expect(made.frameCount == (format == .png ? 1 : 3), "\(format): \(made.frameCount) frames")
            // Orientation 6: the stored picture turned a quarter clockwise; upright (x, y) is stored (y, 9 - x).
            for (x, y) in [(0, 0), (9, 0), (0, 19), (9, 19), (4, 7)] where format != .webp {
                let shown = Array(made.pixels[(y * 10 + x) * 4..<(y * 10 + x) * 4 + 4])
                let (sx, sy) = (y, 9 - x)
                let stored = Array(plain.pixels[(sy * 20 + sx) * 4..<(sy * 20 + sx) * 4 + 4])
                // (GIF's alpha is one bit: a half-clear pixel is either.)
                #expect(shown.map(Int.init).elementsEqual(stored.map(Int.init)) { abs($0 - $1) <= 2 } || stored[3] == 0
                        || (format == .gif && stored[3] < 255),
                        "\(format) (\(x),\(y)): \(shown) against \(stored)")
            }
        }
    }
}
