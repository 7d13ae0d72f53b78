import Foundation
import ImgCacheCore
import Testing

/// `--thumbnail`, `--scale-down`, `--format`, `--quality`: what is stored, under
/// which key, and that the original is not needed again.
@Suite final class TransformTests: LoopbackCacheSuite {
    func json(_ arguments: [String]) throws -> [String: Any] {
        let result = try fetch(["--json", "fetch"] + arguments)
        #expect(result.status == 0, "\(result.standardError)")
        return try #require(try result.jsonLines().first)
    }

    @Test func aThumbnailFitsTheBoxAndIsServedFromItsOwnEntry() throws {
        // photo.jpg is 96x64: into 32x32 it becomes 32x21.
        let url = server.url("photo.jpg")
        let first = try json(["--thumbnail", "32x32", url])
        #expect(first["width"] as? Int == 32 && first["height"] as? Int == 21 && first["format"] as? String == "jpeg")
        #expect(first["cache"] as? String == "none")
        let path = try #require(first["path"] as? String)
        let decoded = try ImageDecoder.decode([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
        #expect(decoded.width == 32 && decoded.height == 21)

        // Next time from the cache, without the server.
        let again = try json(["--thumbnail", "32x32", url])
        #expect(again["cache"] as? String == "disk" && again["path"] as? String == path)
        #expect(server.requestCount("photo.jpg") == 1)

        // The original was kept: it and another size are entries of their own, made without the server.
        #expect(first["original"] as? String != nil && first["original"] as? String != path)
        let original = try json([url])
        #expect(original["width"] as? Int == 96 && original["path"] as? String == first["original"] as? String)
        #expect(original["cache"] as? String == "disk")
        let other = try json(["--thumbnail", "16x16", url])
        #expect(other["width"] as? Int == 16 && other["height"] as? Int == 11 && other["cache"] as? String == "disk")
        #expect(server.requestCount("photo.jpg") == 1)
    }

    @Test func formatAndQualityChooseTheEncoding() throws {
        let url = server.url("photo.jpg")
        let webp = try json(["--thumbnail", "48x48", "--format", "webp", url])
        #expect(webp["format"] as? String == "webp")
        #expect((webp["path"] as? String)?.hasSuffix(".webp") == true)
        let low = try json(["--thumbnail", "48x48", "--format", "jpeg", "--quality", "10", url])
        let high = try json(["--thumbnail", "48x48", "--format", "jpeg", "--quality", "95", url])
        #expect((low["bytes"] as? Int ?? 0) < (high["bytes"] as? Int ?? 0))
    }

    @Test func anImageAlreadyInsideTheBoxIsStoredAsServed() throws {
        // logo.png is 64x48: a 256x256 thumbnail is the image itself, never upscaled.
        let entry = try json(["--thumbnail", "256x256", server.url("logo.png")])
        #expect(entry["width"] as? Int == 64 && entry["height"] as? Int == 48)
        let path = try #require(entry["path"] as? String)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Paths.fixture("logo.png"))
    }

    @Test func anAnimationKeepsItsFramesInGIFOrWebPAndBecomesItsFirstInPNGOrJPEG() throws {
        // anim.gif: 3 frames of 32x32; each keeps its delay.
        let source = try ImageDecoder.decode([UInt8](try Paths.fixture("anim.gif")))
        for (format, frames) in [("gif", 3), ("webp", 3), ("png", 1), ("jpeg", 1)] {
            let entry = try json(["--thumbnail", "16x16", "--format", format, server.url("anim.gif")])
            #expect(entry["format"] as? String == format && entry["frames"] as? Int == frames, "\(format): \(entry)")
            #expect(entry["source_frames"] as? Int == 3, "\(format): \(entry)")
            #expect(entry["width"] as? Int == 16 && entry["height"] as? Int == 16)
            let path = try #require(entry["path"] as? String)
            let image = try ImageDecoder.decode([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
            #expect(image.frameCount == frames && image.width == 16, "\(format)")
            if frames > 1 { #expect(image.delays == source.delays, "\(format): \(image.delays)") }
        }
        // Without --format, a GIF stays a GIF, animated.
        let own = try json(["--thumbnail", "20x20", server.url("anim.gif")])
        #expect(own["format"] as? String == "gif" && own["frames"] as? Int == 3)
    }

    @Test func anOpaqueImageIsWrittenWithoutAlphaAndAlphaIntoJPEGIsFlattenedOntoTheBackground() throws {
        // photo.jpg has no alpha: its PNG is RGB (colour type 2), not RGBA (6).
        let opaque = try json(["--format", "png", server.url("photo.jpg")])
        let png = try Data(contentsOf: URL(fileURLWithPath: try #require(opaque["path"] as? String)))
        #expect(png[25] == 2, "colour type \(png[25])")
        // alpha.webp: a transparent background. As JPEG it lands on white, or on the colour asked.
        for (arguments, expected) in [([String](), 255), (["--background", "#000000"], 0), (["--background", "red"], 255)] {
            let entry = try json(["--format", "jpeg"] + arguments + [server.url("alpha.webp")])
            let image = try ImageDecoder.decode([UInt8](try Data(contentsOf: URL(fileURLWithPath: try #require(entry["path"] as? String)))))
            // The top-left pixel is transparent in the source.
            #expect(abs(Int(image.pixels[0]) - expected) <= 8, "\(arguments): red \(image.pixels[0])")
        }
    }

    @Test func aPhotoIsTurnedUprightByItsEXIFOrientation() throws {
        // rotated.jpg: 48x32 pixels, orientation 6 (shown 32x48); its thumbnail is upright.
        let entry = try json(["--thumbnail", "24x24", server.url("rotated.jpg")])
        #expect(entry["width"] as? Int == 16 && entry["height"] as? Int == 24)
        let path = try #require(entry["path"] as? String)
        let image = try ImageDecoder.decode([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
        #expect(image.width == 16 && image.height == 24)
    }

    @Test func aRotatedPhotoIsReportedUprightWithItsOrientation() throws {
        // rotated.jpg: 48x32 pixels stored, orientation 6: shown 32 wide and 48 high.
        let entry = try json([server.url("rotated.jpg")])
        #expect(entry["width"] as? Int == 32 && entry["height"] as? Int == 48, "\(entry)")
        #expect(entry["orientation"] as? Int == 6)
        let plain = try json([server.url("photo.jpg")])
        #expect(plain["orientation"] as? Int == 1)
    }

    @Test func gifsAndAnimationsThatNeedNoChangeStayWhole() throws {
        // anim.gif is 32x32 with 3 frames: under any --scale-down limit it is kept as served.
        let entry = try json(["--scale-down=1M", server.url("anim.gif")])
        #expect(entry["format"] as? String == "gif" && entry["frames"] as? Int == 3)
        let path = try #require(entry["path"] as? String)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Paths.fixture("anim.gif"))
    }

    @Test func aURLCannotImpersonateATransformedEntry() throws {
        // The URL with a fragment that looks like a transformer key is an entry of its own.
        let url = server.url("photo.jpg")
        let plain = try json([url + "#imgcache-thumbnail(32x32)-quality(85)"])
        let thumbnail = try json(["--thumbnail", "32x32", url])
        #expect(plain["path"] as? String != thumbnail["path"] as? String)
        #expect(thumbnail["width"] as? Int == 32 && plain["width"] as? Int == 96)
    }

    @Test func scaleDownShrinksOnlyImagesOverTheLimit() throws {
        let url = server.url("photo.jpg")
        // 96x64 is 6144 pixels: under 1000 it keeps its aspect.
        let shrunk = try json(["--scale-down=1000", url])
        let width = try #require(shrunk["width"] as? Int), height = try #require(shrunk["height"] as? Int)
        #expect(width * height <= 1000 && width * height > 800)
        #expect(abs(Double(width) / Double(height) - 1.5) < 0.1)
        // The default limit (15.7 megapixels) leaves it as served.
        let kept = try json(["--options", "ScaleDownLargeImages", url])
        #expect(kept["width"] as? Int == 96)
        let path = try #require(kept["path"] as? String)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Paths.fixture("photo.jpg"))
    }

    @Test func aThumbnailOfSomethingThatIsNotAnImageFailsAsUsual() throws {
        let result = try fetch(["fetch", "--thumbnail", "32x32", server.url("cut.jpg")])
        #expect(result.status == 1)
        #expect(result.standardError.contains("truncated JPEG image"), "\(result.standardError)")
        #expect(CacheInspection.storedFiles(under: cacheRoot + "/default").isEmpty)
        #expect(CacheInspection.temporaryFiles(under: cacheRoot).isEmpty)
    }
}
