import Foundation
import ImgCacheCore
import Testing

/// Thumbnails, conversions and shrunk copies as a site generator asks for
/// them: made from the cached original (one GET whatever is asked; a new size
/// with the server gone), several in one call, in the geometry asked.
@Suite final class VariantTests: FaultServerSuite {
    var photo: String { faults.baseURL + "/image/photo.jpg" }  // 96x64
    var logo: String { faults.baseURL + "/image/logo.png" }  // 64x48, transparent corners
    var gets: Int { faults.requestCount(path: "/image/photo.jpg") }

    func json(_ arguments: [String]) throws -> [String: Any] {
        let result = try fetch(["--json", "fetch"] + arguments)
        #expect(result.status == 0, "\(arguments): \(result.standardError)")
        return try #require(try result.jsonLines().first)
    }

    func image(_ path: String) throws -> DecodedImage {
        try ImageDecoder.decode([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
    }

    /// A variant's bytes are the same whatever other sizes the run asks, and whatever the cache held
    /// already (a developer's warm cache and CI's cold one give the same names): large photos whose
    /// decode is shrunk (JPEG's DCT scaling, PNG rows shrunk as read, WebP's scaled decode), in fine stripes.
    @Test(arguments: [ImageFormat.jpeg, .png, .webp])
    func aVariantIsTheSameWhateverElseTheRunAsks(format: ImageFormat) throws {
        let docroot = try TemporaryDirectory("imgcache-stable-variants")
        let (width, height) = (2100, 2000)
        var pixels = [UInt8](repeating: 255, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let at = (y * width + x) * 4
                pixels[at] = x % 3 == 0 ? 30 : 220
                pixels[at + 1] = UInt8(y * 255 / height)
                pixels[at + 2] = y % 2 == 0 ? 40 : 200
            }
        }
        let bytes = try ImageEncoder.encode(pixels[...], width: width, height: height, settings: ImageEncoder.Settings(format: format, quality: 90))
        try Data(bytes).write(to: URL(fileURLWithPath: docroot.appending("big." + format.fileExtension)))
        let origin = try NginxServer(serving: docroot.url)
        let url = origin.url("big." + format.fileExtension)
        func variant640(_ cache: String, _ sizes: String) throws -> Data? {
            // Six variants of 4.2 megapixels in an unoptimised build share two cores with the rest of the suite:
            // the decode time limit is lifted, since what this test checks is the bytes.
            let result = try ImgCacheProcess.run(["--cache-dir", home.appending(cache), "--json", "fetch", "--max-decode-time", "5m",
                                                  "--thumbnail", sizes, "--format", "jpeg,webp", url],
                                                 home: home.path)
            #expect(result.status == 0, "\(sizes): \(result.standardError)")
            let variants = try result.jsonLines().first?["variants"] as? [[String: Any]] ?? []
            let path = variants.first { $0["width"] as? Int == 640 && $0["format"] as? String == "webp" }?["path"] as? String
            return path.flatMap { FileManager.default.contents(atPath: $0) }
        }
        let alone = try variant640("alone", "640x")
        #expect(alone != nil)
        #expect(try variant640("ladder", "320x,640x,1280x") == alone)
        #expect(try variant640("wider", "640x,1000x") == alone)
        // A warm cache that had the 640 made alone, asked the whole ladder: the same file is its answer.
        #expect(try variant640("alone", "320x,640x,1000x") == alone)
    }

    /// An animation written as PNG is its first frame whether or not it already fits the box (it
    /// used to stay whole when it fitted: one size of a set animated, the others not).
    @Test func anAPNGWrittenAsPNGIsItsFirstFrameAtEverySize() throws {
        let apng = faults.baseURL + "/image/apng.png"  // 20x10, 3 frames
        for size in ["8x", "20x", "64x64"] {
            let variant = try #require((try json(["--thumbnail", size, "--format", "png", apng])["variants"] as? [[String: Any]])?.first)
            #expect(variant["frames"] as? Int == 1, "\(size): \(variant)")
        }
        // A format that animates keeps the frames at every size.
        let webp = try #require((try json(["--thumbnail", "64x64", "--format", "webp", apng])["variants"] as? [[String: Any]])?.first)
        #expect(webp["frames"] as? Int == 3, "\(webp)")
    }

    @Test func theOriginalAndAnyNumberOfVariantsCostOneDownload() throws {
        let first = try json(["--thumbnail", "32x32", photo])
        #expect(first["cache"] as? String == "none" && first["width"] as? Int == 32 && first["height"] as? Int == 21)
        _ = try json([photo])
        _ = try json(["--thumbnail", "16x", photo])
        _ = try json(["--format", "webp", photo])
        let several = try json(["--thumbnail", "8x,24x", "--format", "png,webp", photo])
        #expect((several["variants"] as? [Any])?.count == 4)
        #expect(gets == 1)
    }

    /// `--thumbnail 32x` of a JPEG writes a JPEG: asked with `--format jpeg` (before or after), it is
    /// the same entry, not the same bytes stored twice; a format the original is not in is its own.
    @Test func aThumbnailInTheOriginalsFormatIsStoredOnceHoweverItIsAsked() throws {
        func files() -> Int {
            CacheInspection.files(under: cacheRoot).filter {
                let name = ($0 as NSString).lastPathComponent
                return !name.hasPrefix("tmp.") && !["lock", "urls", "stats", "settings", "failed", "CACHEDIR.TAG"].contains(name) && !name.hasSuffix(".meta")
            }.count
        }
        for order in [[[], ["--format", "jpeg"]], [["--format", "jpeg"], []]] {
            let first = try json(["--thumbnail", "32x"] + order[0] + [photo])
            let second = try json(["--thumbnail", "32x"] + order[1] + [photo])
            #expect(first["path"] as? String == second["path"] as? String && second["format"] as? String == "jpeg", "\(order)")
            #expect(second["cache"] as? String == "disk", "\(order): \(second)")
            let stored = files()
            #expect(stored == 2, "\(order): the original and one thumbnail, not \(stored) files")
            // A PNG of it is another image.
            let png = try json(["--thumbnail", "32x", "--format", "png", photo])
            #expect(png["path"] as? String != first["path"] as? String && files() == 3)
            _ = try fetch(["clear"])
        }
        #expect(gets == 2)
    }

    /// "Already fits" is judged on the image as shown: rotated.jpg is stored 48x32 and shown 32x48
    /// (EXIF orientation 6), so a box 40 high is too small for it, whatever its stored height says.
    @Test func anImageTurnedByItsEXIFFitsTheBoxAsShown() throws {
        let rotated = faults.baseURL + "/image/rotated.jpg"
        for (box, width, height) in [("x40", 27, 40), ("40x40", 27, 40), ("x48", 32, 48), ("20x", 20, 30)] {
            let variant = try json(["--thumbnail", box, rotated])
            #expect(variant["width"] as? Int == width && variant["height"] as? Int == height, "\(box): \(variant)")
            // Upright pixels, even where it already fits (x48): browsers ignore EXIF in some formats (WebP).
            let made = try image(try #require(variant["path"] as? String))
            #expect(made.orientation <= 1 && (made.width, made.height) == (width, height), "\(box): \(made.width)x\(made.height)")
            #expect(variant["orientation"] as? Int == 1 && variant["path"] as? String != variant["original"] as? String, "\(box)")
        }
        // Covering a box the stored image would already fill: cropped as shown.
        let cover = try json(["--thumbnail", "32x40", "--fit", "cover", rotated])
        #expect(cover["width"] as? Int == 32 && cover["height"] as? Int == 40, "\(cover)")
    }

    /// A thumbnail's promises hold for an image that needs no resizing: PNG for a format imgcache
    /// does not write, sRGB for one with another profile.
    @Test func anImageThatFitsStillBecomesWhatAThumbnailIs() throws {
        let bmp = try json(["--thumbnail", "256x256", server.url("formats/palette.bmp")])
        #expect(bmp["format"] as? String == "png", "\(bmp)")
        let prophoto = try json(["--thumbnail", "2000x2000", server.url("formats/prophoto.png")])
        let made = try #require(prophoto["path"] as? String)
        #expect(made != (try json([server.url("formats/prophoto.png")])["path"] as? String), "the ProPhoto original was given as its thumbnail")
        #expect(try image(made).colour == .sRGB)
    }

    @Test func aNewSizeOfACachedImageNeedsNoServer() throws {
        let original = try json([photo])
        faults.stop()
        for arguments in [["--thumbnail", "40x"], ["--thumbnail", "x10", "--cache-only"], ["--format", "avif"]] {
            let variant = try json(arguments + [photo])
            #expect(variant["cache"] as? String == "disk", "\(arguments)")
            #expect(variant["original"] as? String == original["path"] as? String)
        }
        // Every variant already made answers even when the original has gone.
        try FileManager.default.removeItem(atPath: try #require(original["path"] as? String))
        let again = try json(["--thumbnail", "40x", photo])
        #expect(again["width"] as? Int == 40 && again["original"] is NSNull)
        // A size never made needs the original: the server, which is gone.
        let missing = try fetch(["fetch", "--thumbnail", "50x", photo])
        #expect(missing.status == 1)
    }

    @Test func aVariantWhoseOriginalWasEvictedDownloadsItAgain() throws {
        let original = try json([photo])
        try FileManager.default.removeItem(atPath: try #require(original["path"] as? String))
        let variant = try json(["--thumbnail", "20x20", photo])
        #expect(variant["cache"] as? String == "none" && gets == 2)
        #expect(FileManager.default.fileExists(atPath: try #require(variant["original"] as? String)))
    }

    @Test func severalSizesAndFormatsAreOneLineOfPathsSizesFirstThenFormats() throws {
        let result = try fetch(["fetch", "--with-url", "--thumbnail", "48x,16x", "--format", "webp,png", photo, photo])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.lines.count == 2)
        let fields = result.lines[0].split(separator: "\t").map(String.init)
        #expect(fields.count == 5 && fields[0] == photo)
        let made = try fields.dropFirst().map { try image($0) }
        #expect(made.map(\.width) == [48, 48, 16, 16])
        #expect(made.map(\.format) == [.webp, .png, .webp, .png])
        #expect(result.lines[1] == result.lines[0])
        // --srcset for HTML, the widest last as asked.
        let srcset = try fetch(["fetch", "--srcset", "--thumbnail", "16x,48x", photo])
        let candidates = srcset.output.trimmingCharacters(in: .newlines).components(separatedBy: ", ")
        #expect(candidates.count == 2 && candidates[0].hasSuffix(" 16w") && candidates[1].hasSuffix(" 48w"), "\(srcset.output)")
        #expect(try image(String(candidates[1].dropLast(4))).width == 48)
        // -o takes one image.
        #expect(try fetch(["fetch", "--thumbnail", "16x,48x", "-o", home.appending("x.png"), photo]).status == 64)
    }

    @Test func coverCropsContainPadsFillStretchesAndNothingGrowsUnlessAsked() throws {
        let cover = try image(try #require(try json(["--thumbnail", "32x32", "--fit", "cover", photo])["path"] as? String))
        #expect(cover.width == 32 && cover.height == 32)
        let fill = try image(try #require(try json(["--thumbnail", "30x40", "--fit", "fill", photo])["path"] as? String))
        #expect(fill.width == 30 && fill.height == 40)
        // Contain: the picture (48x32) centred on 48x48, the rest transparent, or the colour asked.
        let contain = try image(try #require(try json(["--thumbnail", "48x48", "--fit", "contain", "--format", "png", photo])["path"] as? String))
        #expect(contain.width == 48 && contain.height == 48)
        #expect(contain.pixels[3] == 0 && contain.pixels[(24 * 48 + 24) * 4 + 3] == 255)
        let padded = try image(try #require(try json(["--thumbnail", "48x48", "--fit", "contain", "--background", "#ff0000",
                                                      "--format", "png", photo])["path"] as? String))
        #expect(Array(padded.pixels[0..<4]) == [255, 0, 0, 255])
        // Never upscaled unless asked.
        #expect(try json(["--thumbnail", "128x", logo])["width"] as? Int == 64)
        let enlarged = try json(["--thumbnail", "128x", "--upscale", logo])
        #expect(enlarged["width"] as? Int == 128 && enlarged["height"] as? Int == 96)
        // Each choice is a variant of its own.
        let paths = Set(try [["--fit", "cover"], ["--fit", "contain"], ["--fit", "fill"], ["--quality", "50"]].map {
            try json(["--thumbnail", "32x32"] + $0 + [photo])["path"] as? String ?? ""
        })
        #expect(paths.count == 4)
        // A fit that makes exactly WxH needs both.
        #expect(try fetch(["fetch", "--thumbnail", "32x", "--fit", "cover", photo]).status == 64)
    }

    @Test func withNoOriginalOnlyTheVariantsAreKept() throws {
        let variant = try json(["--thumbnail", "20x", "--no-original", photo])
        #expect(variant["original"] is NSNull && variant["width"] as? Int == 20)
        #expect(try fetch(["fetch", "--cache-only", photo]).status == 1)
        #expect(CacheInspection.storedFiles(under: cacheRoot + "/default").count == 1)
    }
}
