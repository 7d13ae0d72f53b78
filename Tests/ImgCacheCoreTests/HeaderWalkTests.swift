@testable import ImgCacheCore
import Testing

/// The header walks over hostile input: every step consumes bytes, so they end.
@Suite struct HeaderWalkTests {
    /// A GIF89a screen of 4x3 without a colour table, then `body`.
    static func gif(_ body: [UInt8]) -> [UInt8] {
        Array("GIF89a".utf8) + [4, 0, 3, 0, 0x00, 0, 0] + body
    }
    static let frame: [UInt8] = [0x2C, 0, 0, 0, 0, 4, 0, 3, 0, 0x00, 2, 2, 0x4C, 0x01, 0x00]

    @Test func framesAreCountedAndTheTrailerIsOptional() throws {
        #expect(try ImageHeader.probe(Self.gif(Self.frame + Self.frame + [0x3B])).frameCount == 2)
        #expect(try ImageHeader.probe(Self.gif(Self.frame)).frameCount == 1)
    }

    @Test func endlessExtensionsAndCutFramesAreCorrupt() throws {
        // An extension whose sub-blocks never end: 200,000 bytes of 0xFF-sized blocks, cut off.
        let endless = Self.gif([0x21, 0xFE] + Array(repeating: 0xFF, count: 200_000))
        #expect(throws: ImageHeader.ProbeError.corrupt(.gif, "file ends inside an extension")) { try ImageHeader.probe(endless) }
        #expect(throws: ImageHeader.ProbeError.corrupt(.gif, "file ends inside frame 2")) {
            try ImageHeader.probe(Self.gif(Self.frame + Array(Self.frame.prefix(12))))
        }
        #expect(throws: ImageHeader.ProbeError.corrupt(.gif, "no frame")) { try ImageHeader.probe(Self.gif([0x3B])) }
        // An unknown block ends the walk after the frames before it (browsers show those); before any, it is corrupt.
        #expect(try ImageHeader.probe(Self.gif(Self.frame + [0x00] + Self.frame)).frameCount == 1)
        #expect(throws: ImageHeader.ProbeError.corrupt(.gif, "unknown block 0x0 before the first frame")) {
            try ImageHeader.probe(Self.gif([0x00] + Self.frame))
        }
    }

    @Test func webpChunkCountingStopsAtTheEnd() {
        // A chunk claiming 4 GB: the walk steps past the end and stops.
        let bytes = Array("RIFF\0\0\0\0WEBPANMF".utf8) + [0xFF, 0xFF, 0xFF, 0xFF] + Array("ANMF".utf8)
        #expect(WebPCodec.countChunks("ANMF", in: bytes) == 1)
    }

    @Test func apngFramesComeFromACTLBeforeTheFirstIDAT() {
        func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
            [0, 0, 0, UInt8(data.count)] + Array(type.utf8) + data + [0, 0, 0, 0]
        }
        let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        let ihdr = chunk("IHDR", Array(repeating: 0, count: 13))
        #expect(PNGCodec.apngFrameCount(signature + ihdr + chunk("acTL", [0, 0, 0, 5, 0, 0, 0, 0]) + chunk("IDAT", [])) == 5)
        #expect(PNGCodec.apngFrameCount(signature + ihdr + chunk("IDAT", []) + chunk("acTL", [0, 0, 0, 5, 0, 0, 0, 0])) == nil)
    }
}
