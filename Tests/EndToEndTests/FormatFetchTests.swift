import Foundation
import ImgCacheCore
import Testing

/// AVIF, HEIC, JPEG XL, TIFF, BMP, ICO and SVG as a user meets them: fetched
/// from nginx and stored as served, sized as shown, thumbnailed into a format
/// imgcache writes, in sRGB; a file cut short is refused and nothing stored.
@Suite final class FormatFetchTests: LoopbackCacheSuite {
    static let rows: [(name: String, format: String, width: Int, height: Int)] = {
        let table = (try? String(contentsOf: Paths.fixtures.appendingPathComponent("formats/formats.tsv"), encoding: .utf8)) ?? ""
        return table.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { line in
            let fields = line.split(separator: "\t").map(String.init)
            return (fields[0], fields[1], Int(fields[2])!, Int(fields[3])!)
        }
    }()

    @Test func everyFormatIsStoredAsServedAndSizedAsShown() throws {
        for row in Self.rows {
            let result = try fetch(["--json", "fetch", server.url("formats/" + row.name)])
            #expect(result.status == 0, "\(row.name): \(result.standardError)")
            let object = try #require(try result.jsonLines().first)
            #expect(object["format"] as? String == row.format, "\(row.name)")
            #expect(object["width"] as? Int == row.width && object["height"] as? Int == row.height, "\(row.name)")
            // The entry is the file itself, byte for byte (an SVG stays an SVG).
            let path = try #require(object["path"] as? String)
            let served = try Data(contentsOf: Paths.fixtures.appendingPathComponent("formats/" + row.name))
            #expect(FileManager.default.contents(atPath: path) == served, "\(row.name)")
            #expect(path.hasSuffix("." + (ImageFormat(rawValue: row.format)?.fileExtension ?? "?")), "\(path)")
        }
    }

    @Test func everyFormatIsThumbnailedIntoAWrittenFormat() throws {
        for row in Self.rows {
            let output = home.appending(row.name + ".png")
            let result = try fetch(["fetch", "--thumbnail", "16x16", "-o", output, server.url("formats/" + row.name)])
            #expect(result.status == 0, "\(row.name): \(result.standardError)")
            let image = try ImageDecoder.decode([UInt8](try Data(contentsOf: URL(fileURLWithPath: output))))
            #expect(image.format == .png && max(image.width, image.height) == 16, "\(row.name): \(image.width)x\(image.height)")
            // Upright: a taller-than-wide picture stays taller than wide.
            #expect((image.width < image.height) == (row.width < row.height), "\(row.name)")
        }
    }

    @Test func anSVGIsDrawnAtTheSizeAskedAndAVIFAndJPEGXLWrittenAtTheQualityAsked() throws {
        // 40x30 as it says: into a 200x200 box it stays 40x30, as any image, unless --upscale asks.
        let kept = home.appending("kept.png")
        let small = try fetch(["fetch", "--thumbnail", "200x200", "-o", kept, server.url("formats/shapes.svg")])
        #expect(small.status == 0, "\(small.standardError)")
        let own = try ImageDecoder.decode([UInt8](try Data(contentsOf: URL(fileURLWithPath: kept))))
        #expect(own.width == 40 && own.height == 30, "\(own.width)x\(own.height)")
        // With --upscale it is drawn at 200x150, not 40x30 enlarged.
        let drawn = home.appending("shapes.png")
        let result = try fetch(["fetch", "--thumbnail", "200x200", "--upscale", "-o", drawn, server.url("formats/shapes.svg")])
        #expect(result.status == 0, "\(result.standardError)")
        let image = try ImageDecoder.decode([UInt8](try Data(contentsOf: URL(fileURLWithPath: drawn))))
        try #require(image.width == 200 && image.height == 150, "\(image.width)x\(image.height)")
        // Sharp edges: the red square's corner is one pixel wide, not a ramp.
        #expect(Array(image.pixels[(49 * 200 + 40) * 4..<(49 * 200 + 40) * 4 + 4]) == [0xE0, 0x30, 0x20, 255])
        // A size that rounds (24x36 into 16 high: 10.67 wide) is covered to its edges.
        let rounded = home.appending("editor.png")
        #expect(try fetch(["fetch", "--thumbnail", "16x16", "-o", rounded, server.url("formats/editor.svg")]).status == 0)
        let covered = try ImageDecoder.decode([UInt8](try Data(contentsOf: URL(fileURLWithPath: rounded))))
        #expect(covered.width == 10 && covered.height == 16, "\(covered.width)x\(covered.height)")
        #expect(stride(from: 3, to: covered.pixels.count, by: 4).allSatisfy { covered.pixels[$0] == 255 }, "a transparent edge")
        var sizes: [Int] = []
        for quality in ["30", "90"] {
            let output = home.appending("q\(quality).avif")
            let written = try fetch(["fetch", "--format", "avif", "--quality", quality, "-o", output, server.url("photo.jpg")])
            #expect(written.status == 0, "\(written.standardError)")
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: output)))
            #expect(try ImageHeader.probe(bytes).format == .avif)
            sizes.append(bytes.count)
        }
        #expect(sizes[0] < sizes[1], "\(sizes)")
        // JPEG XL too: lossy at a quality, lossless at 100 (every pixel back as it was).
        let lossless = home.appending("logo.jxl")
        let written = try fetch(["fetch", "--format", "jxl", "--quality", "100", "-o", lossless, server.url("logo.png")])
        #expect(written.status == 0, "\(written.standardError)")
        let back = try ImageDecoder.decode([UInt8](try Data(contentsOf: URL(fileURLWithPath: lossless))))
        let original = try ImageDecoder.decode([UInt8](try Data(contentsOf: Paths.fixtures.appendingPathComponent("logo.png"))))
        #expect(back.format == .jxl && back.pixels == original.pixels)
    }

    @Test func aProfileTaggedImageIsWrittenInSRGB() throws {
        // A ProPhoto JPEG: its stored numbers are far from what it shows; the thumbnail has what it shows.
        let output = home.appending("prophoto.png")
        let result = try fetch(["fetch", "--format", "png", "-o", output, server.url("formats/prophoto.jpg")])
        #expect(result.status == 0, "\(result.standardError)")
        let mine = try ImageDecoder.decode([UInt8](try Data(contentsOf: URL(fileURLWithPath: output))))
        let reference = try ImageDecoder.decode([UInt8](try Data(contentsOf: Paths.fixtures.appendingPathComponent("formats/prophoto.jpg.ref.png"))))
        let worst = zip(mine.pixels, reference.pixels).map { abs(Int($0) - Int($1)) }.max() ?? 255
        #expect(mine.width == reference.width && worst <= 2, "largest channel difference \(worst)")
    }

    /// With the default check too: each format's end is found without decoding its pixels
    /// (a bare JPEG XL codestream's last frame excepted, which nothing but a decode marks the end
    /// of: `--verify full` refuses it, the header check stores it, as Docs/SECURITY.md says).
    @Test(arguments: [["--verify", "full"], []])
    func aFileCutShortIsRefusedAndNothingIsStored(verify: [String]) throws {
        for row in Self.rows {
            let url = server.url("formats/cut/" + row.name)
            let result = try fetch(["fetch"] + verify + [url])
            if verify.isEmpty, row.name == "still.jxl" {
                #expect(result.status == 0, "\(result.standardError)")
                // libjxl says nothing of it on stderr either: its probe never fails on a file cut short.
                #expect(result.standardError.isEmpty, "\(result.standardError)")
                _ = try fetch(["clear"])
                continue
            }
            #expect(result.status == 1, "\(row.name) was taken with \(verify): \(result.output)")
            #expect(result.standardError.contains("\(url): "), "\(result.standardError)")
            #expect(CacheInspection.storedFiles(under: cacheRoot + "/default").isEmpty, "\(row.name)")
        }
    }

    /// An SVG whose root element comes after a long prolog (an editor's comment) is a hit next
    /// time: the 64 bytes a hit reads cannot show the root, but they cannot rule it out either.
    @Test func anSVGWithALongPrologIsAHitTheSecondTime() throws {
        let url = server.url("formats/editor.svg")
        #expect(try fetch(["fetch", url]).status == 0)
        let again = try fetch(["-v", "--json", "fetch", url])
        #expect(try again.jsonLines().first?["cache"] as? String == "disk", "\(again.standardError)")
        #expect(!again.standardError.contains("damaged"), "\(again.standardError)")
    }

    @Test func theAcceptHeaderNamesWhatImgcacheReadsBestFirst() throws {
        let result = try fetch(["-v", "fetch", server.url("formats/still.avif")])
        #expect(result.status == 0)
        #expect(DownloadRequest.defaultAccept.hasPrefix("image/avif,image/jxl,image/webp,"))
        for format in CodecRegistry.storedFormats { #expect(DownloadRequest.defaultAccept.contains(format.mediaType)) }
    }
}

/// A server that chooses the format by `Accept` (`Vary: Accept`): each
/// Accept gets, and keeps, its own answer.
@Suite final class NegotiationTests: LoopbackCacheSuite {
    @Test func twoClientsAskingDifferentlyNeverGetEachOthersBytes() throws {
        let url = server.url("negotiated")
        let avif = try fetch(["--json", "fetch", url])
        #expect(try avif.jsonLines().first?["format"] as? String == "avif", "\(avif.standardError)")
        let jpeg = try fetch(["--json", "fetch", "--accept", "image/jpeg", url])
        let answer = try #require(try jpeg.jsonLines().first)
        #expect(answer["format"] as? String == "jpeg" && answer["cache"] as? String == "none", "\(jpeg.output)")
        // Each is found again by whoever asks the same way, from the cache.
        let again = try fetch(["--json", "fetch", url])
        #expect(try again.jsonLines().first?["format"] as? String == "avif")
        #expect(try again.jsonLines().first?["cache"] as? String == "disk")
        let jpegAgain = try fetch(["--json", "fetch", "-H", "Accept: image/jpeg", url])
        #expect(try jpegAgain.jsonLines().first?["format"] as? String == "jpeg")
        #expect(try jpegAgain.jsonLines().first?["cache"] as? String == "disk")
    }

    /// Each answer is an entry of its own that `list` names by what was asked and `remove URL` takes with the rest.
    @Test func eachAnswerIsListedByItsAcceptAndRemovedWithItsURL() throws {
        let url = server.url("negotiated")
        for arguments in [[], ["--accept", "image/jpeg"], ["--accept", "image/jpeg", "--thumbnail", "16x16"], ["--thumbnail", "16x16"]] {
            let result = try fetch(["fetch"] + arguments + [url])
            #expect(result.status == 0, "\(arguments): \(result.standardError)")
        }
        let listed = try fetch(["--json", "list"]).jsonLines()
        let shown = Set(listed.map { "\($0["url"] as? String ?? "?") \($0["transform"] as? String ?? "-") \($0["accept"] as? String ?? "-")" })
        let thumbnail = "imgcache-thumbnail(16x16)-quality(85)"
        #expect(shown == ["\(url) - -", "\(url) - image/jpeg", "\(url) \(thumbnail) image/jpeg", "\(url) \(thumbnail) -"], "\(shown)")
        let plain = try fetch(["list"]).lines
        #expect(plain.contains { $0.hasSuffix(url + " [\(thumbnail) Accept: image/jpeg]") }, "\(plain)")
        let removed = try fetch(["--json", "remove", url])
        let removedLines = try removed.jsonLines()
        #expect(removed.status == 0 && removedLines.count == 4, "\(removed.output)")
        #expect(CacheInspection.storedFiles(under: cacheRoot + "/default").isEmpty)
    }

    @Test func acceptAndAnAcceptHeaderTogetherAreRefused() throws {
        let result = try fetch(["fetch", "--accept", "image/png", "-H", "Accept: image/gif", server.url("photo.jpg")])
        #expect(result.status == 64)
        #expect(result.standardError.contains("--accept"), "\(result.standardError)")
    }
}
