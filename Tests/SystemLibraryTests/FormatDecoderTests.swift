import Foundation
import CImgCacheShims
@testable import ImgCacheCore
import Testing

/// The formats read through libavif, libheif, libjxl, libtiff, librsvg and
/// imgcache's own BMP and ICO reader: each fixture's header against what its
/// maker wrote, and its pixels (upright, in sRGB) against a reference decoder's
/// (avifdec, heif-convert, djxl, rsvg-convert, Pillow), within the rounding
/// lossy decoders differ by. Tests/Fixtures/make_format_fixtures.py makes them.
@Suite struct FormatDecoderTests {
    static let folder = DecoderTests.fixtures.appendingPathComponent("formats")

    static func bytes(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: folder.appendingPathComponent(name)))
    }

    struct Row: Sendable, CustomStringConvertible {
        let name: String, format: String, width: Int, height: Int, frames: Int, alpha: Bool, depth: Int, tolerance: Int
        var description: String { name }
    }

    static let rows: [Row] = {
        let text = (try? String(contentsOf: folder.appendingPathComponent("formats.tsv"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { line in
            let f = line.split(separator: "\t").map(String.init)
            return Row(name: f[0], format: f[1], width: Int(f[2])!, height: Int(f[3])!, frames: Int(f[4])!, alpha: f[5] == "1",
                       depth: Int(f[6])!, tolerance: Int(f[7])!)
        }
    }()

    @Test func everyFormatHasFixtures() {
        let formats = Set(Self.rows.map(\.format))
        for format in ["avif", "heic", "jxl", "tiff", "bmp", "ico", "svg"] { #expect(formats.contains(format), "\(format)") }
    }

    @Test(arguments: rows)
    func theHeaderSaysWhatTheFileHolds(row: Row) throws {
        let header = try ImageHeader.probe(try Self.bytes(row.name))
        #expect(header.format.rawValue == row.format)
        // The size as shown: an EXIF orientation that turns it a quarter swaps them.
        let shown = header.orientation >= 5 ? (header.height, header.width) : (header.width, header.height)
        #expect(shown == (row.width, row.height), "\(shown)")
        #expect((header.frameCount ?? 0) == row.frames)
        #expect(header.hasAlpha == row.alpha)
        #expect(header.bitDepth == row.depth)
    }

    @Test(arguments: rows)
    func thePixelsAreTheReferenceDecodersInSRGB(row: Row) throws {
        let image = try ImageDecoder.decode(try Self.bytes(row.name)).inSRGB()
        let reference = try ImageDecoder.decode(try Self.bytes(row.name + ".ref.png"))
        let upright = ImageOrientation.apply(image.frame(0), width: image.width, height: image.height, orientation: image.orientation)
        #expect(upright.width == reference.width && upright.height == reference.height)
        #expect(image.frameCount == (row.format == "png" || row.format == "jpeg" ? 1 : row.frames))
        guard upright.width == reference.width, upright.height == reference.height else { return }
        var worst = 0
        let mine = upright.pixels[...], theirs = reference.frame(0)
        for index in stride(from: 0, to: mine.count, by: 4) {
            let a = mine.startIndex + index, b = theirs.startIndex + index
            worst = max(worst, abs(Int(mine[a + 3]) - Int(theirs[b + 3])))
            // The colour of a fully transparent pixel is nobody's business.
            guard theirs[b + 3] > 0 else { continue }
            for channel in 0..<3 { worst = max(worst, abs(Int(mine[a + channel]) - Int(theirs[b + channel]))) }
        }
        #expect(worst <= row.tolerance, "largest channel difference \(worst)")
    }

    @Test(arguments: rows.filter { !["png", "jpeg"].contains($0.format) })
    func aFileCutShortIsCaughtByItsEndOrItsDecoder(row: Row) throws {
        let whole = try Self.bytes(row.name)
        for cut in [whole.count * 2 / 3, whole.count - 5] {
            let part = Array(whole.prefix(cut))
            let format = try #require(ImageFormat(rawValue: row.format))
            if ImageHeader.missingEnd(of: part, format: format) != nil { continue }
            #expect(throws: ImageDecoder.DecodeError.self, "\(row.name) cut at \(cut) of \(whole.count)") {
                _ = try ImageDecoder.decode(part)
            }
        }
    }

    @Test(arguments: rows)
    func thePixelLimitIsCheckedFromTheHeader(row: Row) throws {
        let header = try ImageHeader.probe(try Self.bytes(row.name))
        let limit = PixelLimit(pixels: row.width * row.height - 1)
        #expect(throws: ImageDecoder.DecodeError.tooManyPixels(width: header.codedWidth, height: header.codedHeight, limit: limit)) {
            _ = try ImageDecoder.decode(try Self.bytes(row.name), maximumPixels: limit)
        }
    }

    @Test func sequencesAndAnimationsKeepEveryFrame() throws {
        let avif = try ImageDecoder.decode(try Self.bytes("sequence.avif"))
        #expect(avif.frameCount == 3 && avif.delays == [100, 100, 100] && avif.loopCount == 0)
        let jxl = try ImageDecoder.decode(try Self.bytes("anim.jxl"))
        #expect(jxl.frameCount == 3 && jxl.delays == [100, 100, 100])
        #expect(try ImageDecoder.decode(try Self.bytes("anim.jxl"), maximumFrames: 1).frameCount == 1)
    }

    @Test func anSVGReachesNothingOutsideItselfAndItsEntitiesAreBounded() throws {
        // An outside image, by file and by URL: not drawn (the reference has neither).
        let outside = Array("""
            <svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="8" height="8">\
            <image width="8" height="8" xlink:href="\(Self.folder.appendingPathComponent("rgb.bmp.ref.png").path)"/>\
            <image width="8" height="8" href="http://127.0.0.1:9/x.png"/></svg>
            """.utf8)
        let drawn = try ImageDecoder.decode(outside)
        #expect(drawn.pixels.allSatisfy { $0 == 0 })
        let laughs = "<?xml version=\"1.0\"?><!DOCTYPE svg [<!ENTITY a \"hahahahahahahahahaha\">"
            + (1...9).map { "<!ENTITY \(Character(UnicodeScalar(97 + $0)!)) \"" + String(repeating: "&\(Character(UnicodeScalar(96 + $0)!));", count: 10) + "\">" }.joined()
            + "]><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"4\" height=\"4\"><text>&j;</text></svg>"
        #expect(throws: ImageDecoder.DecodeError.corrupt(.svg, "its entities expand past 4 MiB")) {
            _ = try ImageDecoder.decode(Array(laughs.utf8))
        }
        let system = "<?xml version=\"1.0\"?><!DOCTYPE svg [<!ENTITY x SYSTEM \"file:///nowhere\">]><svg width=\"4\" height=\"4\">&x;</svg>"
        #expect(throws: ImageDecoder.DecodeError.corrupt(.svg, "it declares an outside or parameter entity (x)")) {
            _ = try ImageDecoder.decode(Array(system.utf8))
        }
    }

    @Test func anSVGIsSizedByItsAttributesOrItsViewBox() throws {
        func size(_ root: String) throws -> (Int, Int) {
            let header = try ImageHeader.probe(Array("<svg xmlns=\"http://www.w3.org/2000/svg\" \(root)></svg>".utf8))
            return (header.width, header.height)
        }
        #expect(try size("width=\"120\" height=\"80\"") == (120, 80))
        #expect(try size("width=\"2in\" height=\"1in\"") == (192, 96))
        #expect(try size("viewBox=\"0 0 64 32\"") == (64, 32))
        #expect(try size("width=\"100\" viewBox=\"0,0,50,25\"") == (100, 50))
        #expect(try size("width=\"100%\" height=\"100%\" viewBox=\"0 0 30 20\"") == (30, 20))
        #expect(try size("") == (300, 150))
        // Negative lengths are ignored, as browsers ignore them.
        #expect(try size("width=\"-50\" height=\"-100\" viewBox=\"0 0 10 20\"") == (10, 20))
        // A namespaced root is an SVG too, whole when its end tag closes it.
        let prefixed = Array("<svg:svg xmlns:svg=\"http://www.w3.org/2000/svg\" width=\"4\" height=\"3\"><svg:rect width=\"4\" height=\"3\"/></svg:svg>\n".utf8)
        #expect(ImageFormat.sniff(prefixed) == .svg && ImageHeader.missingEnd(of: prefixed, format: .svg) == nil)
        let drawn = try ImageDecoder.decode(prefixed)
        #expect(drawn.width == 4 && drawn.height == 3 && drawn.pixels[0..<4] == [0, 0, 0, 255])
    }
}

/// BMP's run-length encodings, made by hand: the rows they describe, bottom up.
@Suite struct RunLengthBitmapTests {
    /// A 4x2 BMP with a two-colour palette (red, blue) and `data` as its RLE8 (compression 1) or RLE4 (2) rows.
    static func bitmap(bits: Int, compression: Int, data: [UInt8]) -> [UInt8] {
        func le(_ value: Int, _ count: Int) -> [UInt8] { (0..<count).map { UInt8((value >> (8 * $0)) & 0xFF) } }
        let palette: [UInt8] = [0, 0, 255, 0, 255, 0, 0, 0]  // BGRX: red, blue
        let offset = 14 + 40 + palette.count
        let info = le(40, 4) + le(4, 4) + le(2, 4) + le(1, 2) + le(bits, 2) + le(compression, 4) + le(data.count, 4)
            + le(0, 4) + le(0, 4) + le(2, 4) + le(0, 4)
        return Array("BM".utf8) + le(offset + data.count, 4) + le(0, 4) + le(offset, 4) + info + palette + data
    }

    @Test func rle8AndRle4RowsAreDrawnBottomUp() throws {
        let red: [UInt8] = [255, 0, 0, 255], blue: [UInt8] = [0, 0, 255, 255]
        // Bottom row: 4 red. Top row: an absolute run of 3 (blue, red, blue, padded), then 1 red. End.
        let rle8 = Self.bitmap(bits: 8, compression: 1, data: [4, 0, 0, 0, 0, 3, 1, 0, 1, 0, 1, 0, 0, 0, 0, 1])
        let image = try ImageDecoder.decode(rle8)
        #expect(image.width == 4 && image.height == 2)
        #expect(image.pixels == blue + red + blue + red + red + red + red + red)
        // RLE4: the bottom row 4 pixels alternating red and blue from one byte (0x01), the top row 4 blue.
        let rle4 = Self.bitmap(bits: 4, compression: 2, data: [4, 0x01, 0, 0, 4, 0x11, 0, 1])
        #expect(try ImageDecoder.decode(rle4).pixels == blue + blue + blue + blue + red + blue + red + blue)
    }
}

/// TIFFs of every kind of sample a file may hold, written here (one uncompressed strip), and
/// what each pixel must decode to: straight RGBA8, whatever libtiff's RGBA interface would make.
@Suite struct TIFFKindsTests {
    /// A little-endian TIFF of `width` x `height`, `bits` a sample, `samples` a pixel (`extra`
    /// of them extra: 1 unassociated alpha, 2 associated), one strip holding `data`.
    static func tiff(width: Int, height: Int, bits: Int, photometric: Int, samples: Int, extra: Int?, data: [UInt8],
                     icc: [UInt8]? = nil) -> [UInt8] {
        var entries: [(tag: Int, type: Int, count: Int, value: Int)] = [
            (256, 4, 1, width), (257, 4, 1, height), (258, 3, 1, bits), (259, 3, 1, 1), (262, 3, 1, photometric),
            (273, 4, 1, 0), (277, 3, 1, samples), (278, 4, 1, height), (279, 4, 1, data.count), (284, 3, 1, 1),
        ]
        if let extra { entries.append((338, 3, 1, extra)) }
        // The ICC profile (InterColorProfile, UNDEFINED bytes) follows the pixels.
        if let icc { entries.append((34675, 7, icc.count, 0)) }
        // BitsPerSample holds one value a sample: more than two do not fit in the entry, so they follow it.
        let directory = 8, directorySize = 2 + entries.count * 12 + 4
        let bitsAt = directory + directorySize, dataAt = bitsAt + (samples > 2 ? samples * 2 : 0)
        var bytes: [UInt8] = [0x49, 0x49, 42, 0] + le(directory, 4) + le(entries.count, 2)
        for entry in entries {
            var value = entry.value
            var count = entry.count
            if entry.tag == 258 { count = samples; if samples > 2 { value = bitsAt } }
            if entry.tag == 273 { value = dataAt }
            if entry.tag == 34675 { value = dataAt + data.count }
            bytes += le(entry.tag, 2) + le(entry.type, 2) + le(count, 4)
            if entry.type == 3 && !(entry.tag == 258 && samples > 2) {
                bytes += entry.tag == 258 && samples == 2 ? le(bits, 2) + le(bits, 2) : le(value, 2) + [0, 0]
            } else {
                bytes += le(value, 4)
            }
        }
        bytes += [0, 0, 0, 0]
        if samples > 2 { for _ in 0..<samples { bytes += le(bits, 2) } }
        return bytes + data + (icc ?? [])
    }

    static func le(_ value: Int, _ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) } }

    /// 16-bit samples in the file's (little-endian) order.
    static func sixteen(_ values: [Int]) -> [UInt8] { values.flatMap { le($0, 2) } }

    @Test func everyKindOfSampleDecodesToStraightRGBA() throws {
        let cases: [(String, [UInt8], [UInt8])] = [
            // 8-bit grey with unassociated alpha: the grey is not divided by the alpha.
            ("grey+alpha 8", Self.tiff(width: 2, height: 1, bits: 8, photometric: 1, samples: 2, extra: 2,
                                       data: [127, 127, 200, 255]), [127, 127, 127, 127, 200, 200, 200, 255]),
            // The same, associated: the grey is.
            ("grey+premultiplied 8", Self.tiff(width: 1, height: 1, bits: 8, photometric: 1, samples: 2, extra: 1,
                                               data: [60, 120]), [128, 128, 128, 120]),
            ("grey+alpha 16", Self.tiff(width: 1, height: 1, bits: 16, photometric: 1, samples: 2, extra: 2,
                                        data: Self.sixteen([32896, 32896])), [128, 128, 128, 128]),
            ("grey 16", Self.tiff(width: 1, height: 1, bits: 16, photometric: 1, samples: 1, extra: nil,
                                  data: Self.sixteen([65535])), [255, 255, 255, 255]),
            ("rgba 16", Self.tiff(width: 1, height: 1, bits: 16, photometric: 2, samples: 4, extra: 2,
                                  data: Self.sixteen([65535, 0, 32896, 16448])), [255, 0, 128, 64]),
            ("cmyk 8", Self.tiff(width: 1, height: 1, bits: 8, photometric: 5, samples: 4, extra: nil,
                                 data: [0, 255, 255, 0]), [255, 0, 0, 255]),
            ("cmyk+alpha 8", Self.tiff(width: 1, height: 1, bits: 8, photometric: 5, samples: 5, extra: 2,
                                       data: [0, 255, 255, 0, 100]), [255, 0, 0, 100]),
            // libtiff's RGBA interface refuses this one ("Sorry, can not handle image").
            ("cmyk 16", Self.tiff(width: 1, height: 1, bits: 16, photometric: 5, samples: 4, extra: nil,
                                  data: Self.sixteen([65535, 0, 65535, 0])), [0, 255, 0, 255]),
        ]
        for (name, file, expected) in cases {
            let image = try ImageDecoder.decode(file)
            #expect(Array(image.pixels) == expected, "\(name): \(Array(image.pixels))")
        }
    }

    /// Whether an AVIF or JPEG XL needs its colours turned into sRGB is read from its header, so
    /// that one tagged Display P3 is never handed back as a thumbnail "already what was asked".
    @Test func aTaggedAVIFOrJPEGXLIsNotTakenForSRGB() throws {
        let still = [UInt8](try Data(contentsOf: FormatDecoderTests.folder.appendingPathComponent("still.avif")))
        #expect(try ImageHeader.probe(still).hasColourProfile == false)
        // Its nclx box says BT.709 primaries (1): made to say Display P3's (12).
        let at = try #require((0..<still.count - 8).first { still[$0..<$0 + 8].elementsEqual(Array("colrnclx".utf8)) })
        var p3 = still
        p3[at + 9] = 12
        let header = try ImageHeader.probe(p3)
        #expect(header.hasColourProfile)
        #expect(!ImageTransform(thumbnail: .init(width: 4000, height: 4000)).keepsAsServed(header))
        let jxl = [UInt8](try Data(contentsOf: FormatDecoderTests.folder.appendingPathComponent("still.jxl")))
        #expect(try ImageHeader.probe(jxl).hasColourProfile == false)
    }

    /// CMYK with its profile is turned into sRGB through the profile (as a CMYK JPEG's is), not by
    /// the ink formula: SWOP's red ink is not (255, 0, 0). The profile is Ghostscript's (libgs-common).
    @Test func aCMYKTIFFsProfileGivesItsColours() throws {
        let profile = try #require(FileManager.default.contents(atPath: "/usr/share/color/icc/ghostscript/default_cmyk.icc"))
        let ink: [UInt8] = [0, 255, 255, 0, 255, 0, 0, 0, 40, 40, 40, 200]
        var reference = [UInt8](repeating: 0, count: 12)
        var error = [CChar](repeating: 0, count: 256)
        let converted = [UInt8](profile).withUnsafeBufferPointer { icc in
            ic_color_cmyk_to_srgb(ink, &reference, 3, 0, icc.baseAddress, icc.count, &error, error.count)
        }
        #expect(converted == 0)
        for (name, samples, extra, data, alpha): (String, Int, Int?, [UInt8], UInt8) in [
            ("cmyk", 4, nil, ink, 255),
            ("cmyk+alpha", 5, 2, [0, 255, 255, 0, 90, 255, 0, 0, 0, 90, 40, 40, 40, 200, 90], 90),
        ] {
            let file = Self.tiff(width: 3, height: 1, bits: 8, photometric: 5, samples: samples, extra: extra, data: data, icc: [UInt8](profile))
            let image = try ImageDecoder.decode(file)
            let pixels = Array(image.pixels)
            for pixel in 0..<3 {
                #expect(Array(pixels[pixel * 4..<pixel * 4 + 3]) == Array(reference[pixel * 4..<pixel * 4 + 3]), "\(name) \(pixel): \(pixels)")
                #expect(pixels[pixel * 4 + 3] == alpha, "\(name)")
            }
            #expect(pixels[0...2] != [255, 0, 0], "\(name): the ink formula's red")
        }
    }
}
