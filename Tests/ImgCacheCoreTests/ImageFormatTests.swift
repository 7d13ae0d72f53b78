@testable import ImgCacheCore
import Testing

@Suite struct ImageFormatTests {
    static func bytes(_ text: String, _ extra: [UInt8] = []) -> [UInt8] { Array(text.utf8) + extra }

    @Test(arguments: [
        ([0xFF, 0xD8, 0xFF, 0xE0], ImageFormat.jpeg),
        ([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0], .png),
        (bytes("GIF87a"), .gif), (bytes("GIF89a"), .gif),
        (bytes("RIFF\u{0}\u{0}\u{0}\u{0}WEBPVP8 "), .webp), (bytes("RIFF\u{0}\u{0}\u{0}\u{0}WEBPVP8L"), .webp),
        (bytes("RIFF\u{0}\u{0}\u{0}\u{0}WEBPVP8X"), .webp),
        ([0x49, 0x49, 0x2A, 0x00], .tiff), ([0x4D, 0x4D, 0x00, 0x2A], .tiff),
        (bytes("BM", [UInt8](repeating: 0, count: 12) + [40, 0, 0, 0]), .bmp),
        (bytes("\u{0}\u{0}\u{0}\u{18}ftypheic"), .heic), (bytes("\u{0}\u{0}\u{0}\u{18}ftypmif1"), .heif),
        (bytes("\u{0}\u{0}\u{0}\u{18}ftypavif"), .avif),
        (bytes("<svg xmlns='http://www.w3.org/2000/svg'/>"), .svg),
        (bytes("\u{FEFF}<?xml version='1.0'?>\n<!-- c -->\n<!DOCTYPE svg>\n<svg/>"), .svg),
    ] as [([UInt8], ImageFormat)])
    func recognisesFullSignatures(bytes: [UInt8], format: ImageFormat) {
        #expect(ImageFormat.sniff(bytes) == format)
    }

    @Test(arguments: [
        [0xFF, 0xD8], bytes("GIF88a"), bytes("RIFF\u{0}\u{0}\u{0}\u{0}WAVEfmt "), bytes("RIFF\u{0}\u{0}\u{0}\u{0}WEBPXXXX"),
        bytes("<!doctype html><html>"), bytes("BM hello world, not a bitmap"), bytes("\u{0}\u{0}\u{0}\u{18}ftypisom"), [],
        [0x89, 0x50, 0x4E, 0x47],
    ] as [[UInt8]])
    func refusesLookalikes(bytes: [UInt8]) {
        #expect(ImageFormat.sniff(bytes) == nil)
    }

    /// A download's first bytes: a page is refused as soon as its first element is not `<svg`,
    /// an SVG prolog still arriving is waited for, however long its notices and entities.
    @Test func anSVGPrologIsWaitedForAndAPageIsNot() {
        let check = BodyCheck(maximumPixels: .standard)
        let page = Self.bytes("<!doctype html>\n<html lang='en'><head>" + String(repeating: " ", count: 100))
        #expect(check.examine(page, contentType: "text/html", complete: false) == (.notAnImage(contentType: "text/html"), true))
        let prolog = Self.bytes("<?xml version='1.0'?>\n<!-- " + String(repeating: "notice ", count: 2000))
        #expect(check.examine(prolog, contentType: nil, complete: false) == (nil, false))
        #expect(ImageFormat.sniff(prolog + Self.bytes(" -->\n<svg width='2' height='2'/>")) == .svg)
        #expect(check.examine(Self.bytes("<sv" + String(repeating: " ", count: 80)), contentType: nil, complete: false).settled)
    }

    @Test func everyRecognisedFormatIsStored() {
        #expect(ImageFormat.allCases.filter(\.isSupported)
            == [.jpeg, .png, .webp, .gif, .avif, .heic, .heif, .jxl, .tiff, .bmp, .ico, .svg])
    }

    @Test func theRegistryDecidesEverythingAFormatIs() {
        // Every format is named, once, by one codec, and the facade answers from it.
        #expect(Set(CodecRegistry.codecs.map(\.format)).count == CodecRegistry.codecs.count)
        for codec in CodecRegistry.codecs {
            #expect(ImageFormat(rawValue: codec.format.rawValue) == codec.format)
            #expect(codec.format.fileExtension == codec.fileExtensions.first)
            if codec.capabilities.contains(.decode) { #expect(ImageFormat(fileExtension: codec.fileExtensions[0]) == codec.format) }
        }
        #expect(ImageFormat(rawValue: "bogus") == nil && ImageFormat(fileExtension: "tif") == .tiff && ImageFormat(fileExtension: "doc") == nil)
        #expect(CodecRegistry.writableFormats == [.jpeg, .png, .webp, .gif, .avif, .jxl] && CodecRegistry.animatedFormats == [.webp, .gif, .avif])
        #expect(CodecRegistry.spelled([.png, .jpeg, .gif]) == "PNG, JPEG or GIF" && CodecRegistry.spelled([.jpeg], extensions: true) == ".jpg")
    }

    @Test func headerProbeRefusesUnsupportedAndUnknownBytes() {
        #expect(throws: ImageHeader.ProbeError.notAnImage) { try ImageHeader.probe(Array("<html>".utf8)) }
        #expect(throws: ImageHeader.ProbeError.corrupt(.tiff, "the first directory is not in the file")) {
            try ImageHeader.probe([0x49, 0x49, 0x2A, 0x00, 8, 0, 0, 0])
        }
    }
}
