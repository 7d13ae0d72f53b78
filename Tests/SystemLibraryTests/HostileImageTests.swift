import Foundation
@testable import ImgCacheCore
import Testing

/// Hostile images: a deterministic mutation corpus made from the fixtures, and
/// bombs in every format. Each must end in an answer or a typed error, with
/// memory bounded by the pixel limit.
@Suite struct HostileImageTests {
    static let limit = PixelLimit(pixels: 4_000_000)

    /// A small deterministic generator (xorshift64*), so every run tries the same mutations.
    struct Mutator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state ^= state >> 12
            state ^= state << 25
            state ^= state >> 27
            return state &* 2_685_821_657_736_338_717
        }
        mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(max(1, bound))) }

        /// One of: a few bits flipped, a cut, a run overwritten, a chunk duplicated.
        mutating func mutate(_ bytes: [UInt8]) -> [UInt8] {
            var result = bytes
            switch below(4) {
            case 0:
                for _ in 0...below(8) { result[below(result.count)] ^= UInt8(1 << below(8)) }
            case 1:
                result = Array(result.prefix(below(result.count)))
            case 2:
                let start = below(result.count), length = min(result.count - start, 1 + below(64))
                let fill: UInt8 = below(2) == 0 ? 0x00 : 0xFF
                for index in start..<(start + length) { result[index] = fill }
            default:
                let start = below(result.count), length = min(result.count - start, 1 + below(256))
                result.insert(contentsOf: result[start..<(start + length)], at: start)
            }
            return result
        }
    }

    @Test func mutatedFixturesEndInAnAnswerOrATypedError() throws {
        var mutator = Mutator(state: 0x9E37_79B9_7F4A_7C15)
        var typedErrors = 0, decoded = 0
        for row in try DecoderTests.table() {
            let original = try DecoderTests.bytes(row[0])
            for _ in 0..<150 {
                let bytes = mutator.mutate(original)
                _ = ImageFormat.sniff(bytes)
                _ = try? ImageHeader.probe(bytes)
                do {
                    let image = try ImageDecoder.decode(bytes, maximumPixels: Self.limit)
                    #expect(image.pixels.count == image.width * image.height * 4 * image.frameCount)
                    decoded += 1
                } catch {
                    typedErrors += 1
                }
            }
        }
        // Both outcomes occur: the corpus exercises the error paths and the decoders' tolerance.
        #expect(typedErrors > 100 && decoded > 100, "\(typedErrors) errors, \(decoded) decoded")
    }

    @Test(arguments: FormatDecoderTests.rows.map(\.name))
    func mutatedFilesOfEveryOtherFormatEndInAnAnswerOrATypedError(name: String) throws {
        var mutator = Mutator(state: 0x2545_F491_4F6C_DD1D ^ UInt64(name.utf8.count))
        let original = try FormatDecoderTests.bytes(name)
        for _ in 0..<100 {
            let bytes = mutator.mutate(original)
            _ = try? ImageHeader.probe(bytes)
            if let format = ImageFormat.sniff(bytes) { _ = ImageHeader.missingEnd(of: bytes, format: format) }
            if let image = try? ImageDecoder.decode(bytes, maximumPixels: Self.limit) {
                #expect(image.pixels.count == image.width * image.height * 4 * image.frameCount)
                _ = try? image.inSRGB()
            }
        }
    }

    @Test func absurdSizesOfEveryOtherFormatAreRefusedFromTheHeader() throws {
        func patched(_ name: String, _ change: (inout [UInt8]) throws -> Void) throws -> [UInt8] {
            var bytes = try FormatDecoderTests.bytes(name)
            try change(&bytes)
            return bytes
        }
        func expectRefused(_ bytes: [UInt8], _ width: Int, _ height: Int, sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(throws: ImageDecoder.DecodeError.tooManyPixels(width: width, height: height, limit: .standard),
                    sourceLocation: sourceLocation) { try ImageDecoder.decode(bytes) }
        }
        // AVIF and HEIC: the primary item's ispe (the last: heif-enc's grid follows its tile's) says 60000x60000.
        for name in ["still.avif", "still.heic"] {
            expectRefused(try patched(name) { bytes in
                let at = try #require((0..<(bytes.count - 16)).last { bytes[$0..<($0 + 4)].elementsEqual("ispe".utf8) })
                bytes.replaceSubrange((at + 8)..<(at + 16), with: [0, 0, 0xEA, 0x60, 0, 0, 0xEA, 0x60])
            }, 60_000, 60_000)
        }
        // TIFF: ImageWidth and ImageLength (LONG or SHORT) set to 60000.
        expectRefused(try patched("deflate.tiff") { bytes in
            let directory = Int(bytes[4]) | Int(bytes[5]) << 8 | Int(bytes[6]) << 16 | Int(bytes[7]) << 24
            let count = Int(bytes[directory]) | Int(bytes[directory + 1]) << 8
            for entry in 0..<count {
                let at = directory + 2 + entry * 12
                if [0x00, 0x01].contains(bytes[at]), bytes[at + 1] == 0x01 {  // tags 256 and 257
                    bytes[at + 8] = 0x60; bytes[at + 9] = 0xEA; bytes[at + 10] = 0; bytes[at + 11] = 0
                }
            }
        }, 60_000, 60_000)
        // BMP: width and height in its info header.
        expectRefused(try patched("rgb.bmp") { bytes in
            bytes.replaceSubrange(18..<26, with: [0x60, 0xEA, 0, 0, 0x60, 0xEA, 0, 0])
        }, 60_000, 60_000)
        // SVG: a width and height of 60000 pixels.
        expectRefused(Array("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"60000\" height=\"60000\"></svg>".utf8), 60_000, 60_000)
        // HEIF: a grid whose descriptor asks for a 29292x25704 canvas, its ispe saying 40x30 (found by the fuzzer).
        let grid = FuzzRegressionTests.fuzz.appendingPathComponent("crashers/heif/oom-fbe26f57c6cc67a3e30ddf61b80c392e8075adcf")
        expectRefused([UInt8](try Data(contentsOf: grid)), 29_292, 25_704)
        // JPEG XL: a 4-byte codestream header cannot say 60000 in so little; a 65536x65536 image made by cjxl is a test of its own.
    }

    /// A camera's photo carries a whole JPEG thumbnail in its EXIF block, scan and end marker
    /// included: cut short after it, the photo is still cut short.
    @Test func aPhotoCutShortIsCaughtWhateverItsEXIFThumbnailHolds() throws {
        let photo = try DecoderTests.bytes("photo.jpg")
        let exif = Array("Exif".utf8) + [0, 0] + [0x4D, 0x4D, 0, 0x2A, 0, 0, 0, 8, 0, 0] + photo
        let app1 = [0xFF, 0xE1, UInt8((exif.count + 2) >> 8), UInt8((exif.count + 2) & 0xFF)] + exif
        let camera = Array(photo[0..<2]) + app1 + Array(photo[2...])
        #expect(ImageHeader.missingEnd(of: camera, format: .jpeg) == nil)
        for fraction in [0.6, 0.8, 0.95] {
            let cut = Array(camera.prefix(Int(Double(camera.count) * fraction)))
            #expect(ImageHeader.missingEnd(of: cut, format: .jpeg) != nil, "cut to \(fraction) passed")
        }
        #expect(try ImageHeader.probe(camera).width == 96)
    }

    /// What librsvg reads as an image, imgcache counts: a scheme split by a line break (a URL parser
    /// drops it), a gzipped SVG (SVGZ) inside, and an image whose header needs more than the
    /// payload's first bytes (a GIF behind a long comment).
    @Test func embeddedImagesAreCountedHoweverLibrsvgWouldReadThem() throws {
        let bomb = Data(try DecoderTests.bytes("bomb.png")).base64EncodedString()
        let head = "<svg xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\" width=\"10\" height=\"10\">"
        for spelling in ["da&#10;ta:image/png;base64,", "da\nta:image/png;base64,", "data\t:image/png;base64,", "da&#x9;ta:image/png;base64,"] {
            let document = head + "<image width=\"10\" height=\"10\" xlink:href=\"\(spelling)\(bomb)\"/></svg>"
            let header = try ImageHeader.probe(Array(document.utf8))
            #expect(header.embedded?.count == 1 && header.pixelsToDecode > 2_000_000_000, "\(spelling): \(String(describing: header.embedded))")
        }
        // A gzipped document holding the bomb, inside.
        let inner = head + "<image width=\"10\" height=\"10\" xlink:href=\"data:image/png;base64,\(bomb)\"/></svg>"
        let gzipped = try Self.gzip(Array(inner.utf8))
        let svgz = head + "<image width=\"10\" height=\"10\" xlink:href=\"data:image/svg+xml;base64,\(Data(gzipped).base64EncodedString())\"/></svg>"
        #expect(try ImageHeader.probe(Array(svgz.utf8)).pixelsToDecode > 2_000_000_000)
        // A GIF whose frames start 600 KB in: its header is read from the whole payload.
        var gif = try DecoderTests.bytes("clear.gif")
        let at = 13 + (gif[10] & 0x80 != 0 ? 3 << (Int(gif[10] & 7) + 1) : 0)
        gif.insert(contentsOf: [0x21, 0xFE] + Array(repeating: [UInt8(255)] + Array(repeating: 0x67, count: 255), count: 2400).joined() + [0], at: at)
        let long = head + "<image width=\"10\" height=\"10\" xlink:href=\"data:image/gif;base64,\(Data(gif).base64EncodedString())\"/></svg>"
        let header = try ImageHeader.probe(Array(long.utf8))
        #expect(header.embedded?.count == 1, "\(String(describing: header.embedded))")
    }

    /// `bytes` gzipped by gzip(1).
    static func gzip(_ bytes: [UInt8]) throws -> [UInt8] {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("imgcache-gzip-\(getpid())-\(UUID().uuidString).svg").path
        defer { try? FileManager.default.removeItem(atPath: path + ".gz") }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/gzip")
        process.arguments = ["-9", path]
        try process.run()
        process.waitUntilExit()
        return Array(try Data(contentsOf: URL(fileURLWithPath: path + ".gz")))
    }

    /// `data:` URLs of every spelling an SVG may hold: percent-encoded documents (how icons are
    /// embedded), an empty payload, base64; none crashes the header check.
    @Test func everySpellingOfADataURLIsReadWithoutACrash() throws {
        let document = try String(contentsOf: FuzzRegressionTests.fuzz.appendingPathComponent("svg/data-urls.svg"), encoding: .utf8)
        // The embedded PNG's header is cut short: said, not taken for a crash.
        #expect(throws: ImageHeader.ProbeError.self) { try ImageHeader.probe(Array(document.utf8)) }
        let icons = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"20\" height=\"20\"><image href=\"data:image/svg+xml,abc\"/>"
            + "<image href=\"data:image/svg+xml,\"/><image href=\"data:image/svg+xml,%3Csvg width=%2240%22 height=%2230%22/%3E\"/></svg>"
        let header = try ImageHeader.probe(Array(icons.utf8))
        #expect(header.embedded == ImageHeader.EmbeddedImages(count: 1, pixels: 40 * 30) && header.width == 20 && header.pixelsToDecode == 400 + 1200,
                "the embedded SVG's size counts: \(String(describing: header.embedded))")
    }

    /// What is wrong with a header is said as it is: a negative width, a directory too long.
    @Test func impossibleHeadersAreNamedAsTheyAre() throws {
        var bmp = try FormatDecoderTests.bytes("rgb.bmp")
        bmp.replaceSubrange(18..<22, with: [0x9C, 0xFF, 0xFF, 0xFF])  // -100
        #expect(throws: ImageHeader.ProbeError.corrupt(.bmp, "a negative width (-100)")) { try ImageHeader.probe(bmp) }
        var ico = try FormatDecoderTests.bytes("icon.ico")
        ico.replaceSubrange(4..<6, with: [0xFF, 0xFF])
        #expect(throws: ImageHeader.ProbeError.corrupt(.ico, "its directory lists 65535 pictures, more than the 1024 imgcache reads")) {
            try ImageHeader.probe(ico)
        }
    }

    /// A GIF: logical screen `width` x `height`, a two-colour table, then `frames` 1x1 frames.
    static func gif(width: Int, height: Int, frames: Int) -> [UInt8] {
        var bytes = Array("GIF89a".utf8) + [UInt8(width & 0xFF), UInt8(width >> 8), UInt8(height & 0xFF), UInt8(height >> 8), 0x80, 0, 0]
        bytes += [0, 0, 0, 255, 255, 255]
        let frame: [UInt8] = [0x2C, 0, 0, 0, 0, 1, 0, 1, 0, 0x00, 2, 2, 0x4C, 0x01, 0x00]
        for _ in 0..<frames { bytes += frame }
        return bytes + [0x3B]
    }

    @Test func anAnimationOfThousandsOfFramesIsCountedThenStoppedByTheLimit() throws {
        let bomb = Self.gif(width: 2000, height: 2000, frames: 5000)
        let header = try ImageHeader.probe(bomb)
        #expect(header.frameCount == 5000 && header.width == 2000)
        // 2000x2000 a frame: the limit (4 megapixels here, every frame counted) refuses it before
        // the first frame, and says so for every frame together.
        #expect(throws: ImageDecoder.DecodeError.tooManyPixels(width: 2000, height: 2000, limit: Self.limit, frames: 5000)) {
            try ImageDecoder.decode(bomb, maximumPixels: Self.limit)
        }
        #expect(ImageDecoder.DecodeError.tooManyPixels(width: 2000, height: 2000, limit: Self.limit, frames: 5000).description
                == "5000 frames of 2000×2000 pixels (20000 megapixels in all) is over the limit of 4 megapixels")
        // Its first frame alone, as a thumbnail needs, is within the limit.
        let first = try ImageDecoder.decode(bomb, maximumPixels: Self.limit, maximumFrames: 1)
        #expect(first.frameCount == 1 && first.width == 2000)
    }

    @Test func absurdCanvasesAreRefusedFromTheHeader() throws {
        // GIF: a 65535x65535 screen.
        #expect(throws: ImageDecoder.DecodeError.tooManyPixels(width: 65_535, height: 65_535, limit: .standard)) {
            try ImageDecoder.decode(Self.gif(width: 65_535, height: 65_535, frames: 1))
        }
        // WebP: a VP8X canvas of 16384x16384, animated, no frames.
        var webp = Array("RIFF".utf8) + [22, 0, 0, 0] + Array("WEBPVP8X".utf8) + [10, 0, 0, 0, 0x02, 0, 0, 0]
        webp += [0xFF, 0x3F, 0x00, 0xFF, 0x3F, 0x00]
        #expect(throws: ImageDecoder.DecodeError.tooManyPixels(width: 16_384, height: 16_384, limit: .standard)) {
            try ImageDecoder.decode(webp)
        }
        // JPEG: photo.jpg with its frame header patched to 60000x60000.
        var jpeg = try DecoderTests.bytes("photo.jpg")
        let sof = try #require((0..<(jpeg.count - 9)).first { jpeg[$0] == 0xFF && jpeg[$0 + 1] == 0xC0 })
        jpeg[sof + 5] = 0xEA; jpeg[sof + 6] = 0x60; jpeg[sof + 7] = 0xEA; jpeg[sof + 8] = 0x60
        #expect(throws: ImageDecoder.DecodeError.tooManyPixels(width: 60_000, height: 60_000, limit: .standard)) {
            try ImageDecoder.decode(jpeg)
        }
    }

    /// What libjpeg decodes whole is stored: junk before a marker, a Photoshop APP13 whose length
    /// is short of its data, an Adobe APP14 cut to its length field. libjpeg skips to the next marker;
    /// the walk that finds the first scan does too.
    @Test func aJPEGLibjpegResynchronisesIsNotTakenForACutOne() throws {
        let photo = try DecoderTests.bytes("photo.jpg")
        // After its APP0 (JFIF) segment, which a sniffer looks for first.
        let app0 = 2 + 2 + (Int(photo[4]) << 8 | Int(photo[5]))
        let head = Array(photo[0..<app0]), after = Array(photo[app0...])
        let photoshop = Array("Photoshop 3.0".utf8) + [0] + Array("8BIM".utf8) + [0x04, 0x04, 0, 0, 0, 0, 0, 40] + [UInt8](repeating: 0x20, count: 40)
        let cases: [(String, [UInt8])] = [
            ("junk before a marker", head + [0x00, 0x13, 0x37, 0x00, 0x42] + after),
            ("a short APP13", head + [0xFF, 0xED, 0x00, 0x10] + photoshop + after),
            ("a cut APP14", head + [0xFF, 0xEE, 0x00, 0x00] + Array("Adobe".utf8) + after),
            ("stuffed bytes before a marker", head + [0x17, 0xFF, 0x00, 0x21, 0xFF, 0xFF] + after),
        ]
        for (name, bytes) in cases {
            let decoded = try ImageDecoder.decode(bytes)
            #expect((decoded.width, decoded.height) == (96, 64), "\(name)")
            #expect(ImageHeader.missingEnd(of: bytes, format: .jpeg) == nil, "\(name)")
            #expect(try ImageHeader.probe(bytes).width == 96, "\(name)")
        }
        // Still cut: junk and then the end of the file, with no scan.
        let scan = try #require(JPEGSegments(photo).firstScan)
        #expect(ImageHeader.missingEnd(of: head + [0x00, 0x13] + Array(photo[app0..<scan]), format: .jpeg) == "the file ends before its first scan")
    }

    @Test func aJPEGsEndIsTheMarkerAfterItsFirstScanWhereverTheMarkersFall() {
        // The byte-by-byte rule, against the searching one, on bodies full of marker bytes: the
        // segments before the first scan walked by their lengths, then an end marker after it.
        func reference(_ bytes: [UInt8]) -> Bool {
            guard bytes.count >= 4, bytes[0] == 0xFF, bytes[1] == 0xD8 else { return false }
            var index = 2
            var scan: Int?
            while scan == nil, index + 4 <= bytes.count {
                // Junk resynchronised on the next FF that is not FF 00 nor a fill FF, as libjpeg does.
                if bytes[index] != 0xFF || bytes[index + 1] == 0x00 {
                    index += 1
                    while index + 1 < bytes.count, !(bytes[index] == 0xFF && bytes[index + 1] != 0x00 && bytes[index + 1] != 0xFF) { index += 1 }
                    if index + 1 >= bytes.count { return false }
                    continue
                }
                let marker = bytes[index + 1]
                if marker == 0xFF { index += 1; continue }
                if marker == 0xDA { scan = index; break }
                if marker == 0x01 || (0xD0...0xD7).contains(marker) { index += 2; continue }
                let length = Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
                guard index + 2 + length <= bytes.count else { return false }
                index += 2 + max(2, length)
            }
            guard let scan else { return false }
            var at = scan + 2
            while at + 1 < bytes.count {
                if bytes[at] == 0xFF && bytes[at + 1] == 0xD9 { return true }
                at += 1
            }
            return false
        }
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 { state ^= state >> 12; state ^= state << 25; state ^= state >> 27; return state &* 0x2545_F491_4F6C_DD1D }
        let alphabet: [UInt8] = [0xFF, 0xD8, 0xD9, 0xDA, 0x00, 0x02, 0x03, 0x42, 0xE1]
        for _ in 0..<20_000 {
            let count = Int(next() % 24)
            // Most with a start-of-image marker first, as a JPEG has.
            let start: [UInt8] = next() % 4 == 0 ? [] : [0xFF, 0xD8]
            let bytes = start + (0..<count).map { _ in alphabet[Int(next() % UInt64(alphabet.count))] }
            #expect((ImageHeader.missingEnd(of: bytes, format: .jpeg) == nil) == reference(bytes), "\(bytes)")
        }
    }

    @Test func aFileCutShortIsCaughtWithoutDecoding() throws {
        for row in try DecoderTests.table() where row[1] != "gif" {
            let whole = try DecoderTests.bytes(row[0])
            let format = try #require(ImageFormat(rawValue: row[1]))
            #expect(ImageHeader.missingEnd(of: whole, format: format) == nil, "\(row[0]) whole")
            #expect(ImageHeader.missingEnd(of: Array(whole.prefix(whole.count - 20)), format: format) != nil, "\(row[0]) cut")
        }
    }
}
