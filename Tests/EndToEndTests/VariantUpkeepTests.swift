import Foundation
import ImgCacheCore
import Testing

/// What keeps variants true to their original and to the run's limits: a
/// refresh that brings new bytes, a refresh that fails, an original damaged
/// in the cache, sizes past the pixel limit, removal by key, a signal while
/// a variant is being made, and what `--srcset`, `--json` and `cache-info`
/// say of them.
@Suite final class VariantUpkeepTests: FaultServerSuite {
    var photo: String { faults.baseURL + "/image/photo.jpg" }  // 96x64, 2203 bytes

    func json(_ arguments: [String], status: Int32 = 0) throws -> [String: Any] {
        let result = try fetch(["--json", "fetch"] + arguments)
        #expect(result.status == status, "\(arguments): \(result.standardError)")
        return try #require(try result.jsonLines().first)
    }

    /// Damages the cached file at `path` in place: `bytes` written over it at `offset`, its size kept.
    func overwrite(_ path: String, at offset: UInt64, with bytes: Data) throws {
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        try handle.seek(toOffset: offset)
        handle.write(bytes)
        try handle.close()
    }

    func image(_ path: String) throws -> DecodedImage {
        try ImageDecoder.decode([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
    }

    @Test func aRefreshThatBringsNewBytesMakesTheVariantsAnew() throws {
        // photo.jpg (96x64) first, then logo.png (64x48) at the same URL.
        let url = faults.baseURL + "/swap/photo.jpg/logo.png"
        #expect(try json(["--thumbnail", "32x", url])["height"] as? Int == 21)
        #expect(try json(["--refresh", url])["format"] as? String == "png")
        // Made again from the new original, without asking the server: not the old photo's thumbnail.
        let remade = try json(["--thumbnail", "32x", url])
        #expect(remade["height"] as? Int == 24 && remade["cache"] as? String == "disk", "\(remade)")
        #expect(faults.requestCount(path: "/swap/photo.jpg/logo.png") == 2)
        // A 304 keeps the file, and so its variants.
        let fresh = faults.baseURL + "/fresh/0/photo.jpg"
        let first = try json(["--thumbnail", "16x", fresh])
        #expect(try json(["--refresh", fresh])["cache"] as? String == "refreshed")
        #expect(try json(["--thumbnail", "16x", fresh])["path"] as? String == first["path"] as? String)
    }

    @Test func aFailedRefreshServesTheVariantsOfAnOriginalNotKept() throws {
        let made = try json(["--thumbnail", "20x", "--no-original", photo])
        faults.stop()
        let stale = try fetch(["--json", "fetch", "--refresh", "--thumbnail", "20x", "--no-original", photo])
        #expect(stale.status == 0, "\(stale.standardError)")
        let line = try #require(try stale.jsonLines().first)
        #expect(line["cache"] as? String == "stale" && line["path"] as? String == made["path"] as? String)
        #expect(stale.standardError.contains("refresh failed"), "\(stale.standardError)")
    }

    @Test func aThumbnailOfAJPEGWithDamagedScanDataIsDrawnAsBrowsersDo() throws {
        // garbled.jpg: photo.jpg with 64 bytes of its scan scrambled; stored by the header check.
        let url = faults.baseURL + "/image/garbled.jpg"
        let thumbnail = try json(["--thumbnail", "48x", url])
        #expect(thumbnail["width"] as? Int == 48 && thumbnail["height"] as? Int == 32)
        #expect(try image(try #require(thumbnail["path"] as? String)).width == 48)
        // With --verify full, the cached original a new variant is made from is checked whole too.
        let verified = try fetch(["fetch", "--verify", "full", "--thumbnail", "40x", url])
        #expect(verified.status == 1)
        #expect(verified.standardError.contains("cannot make its variants: corrupt JPEG image"), "\(verified.standardError)")
        // The full check still refuses it.
        #expect(try fetch(["fetch", "--refresh", "--verify", "full", url]).status == 1)
    }

    @Test func anOriginalDamagedInTheCacheIsRemovedAndDownloadedAgain() throws {
        let logo = faults.baseURL + "/image/logo.png"
        let path = try #require(try json([logo])["path"] as? String)
        // Its compressed pixels overwritten in place: same file, same size, header and end intact.
        try overwrite(path, at: 60, with: Data(repeating: 0xA5, count: 200))
        let broken = try fetch(["fetch", "--thumbnail", "16x", logo])
        #expect(broken.status == 1)
        #expect(broken.standardError.contains("cannot make its variants: corrupt PNG image"), "\(broken.standardError)")
        #expect(broken.standardError.contains("the cached original was removed, so the next fetch downloads it again"))
        #expect(!FileManager.default.fileExists(atPath: path))
        // Not remembered as failed: the next fetch downloads it and makes the thumbnail.
        let mended = try json(["--thumbnail", "16x", logo])
        #expect(mended["width"] as? Int == 16 && mended["cache"] as? String == "none")
        #expect(faults.requestCount(path: "/image/logo.png") == 2)
        // Damage to its header (the markers before the frame): the same.
        let jpeg = try #require(try json([photo])["path"] as? String)
        try overwrite(jpeg, at: 100, with: Data(repeating: 0, count: 64))
        let unreadable = try fetch(["fetch", "--thumbnail", "16x", photo])
        #expect(unreadable.status == 1)
        #expect(unreadable.standardError.contains("the cached original was removed, so the next fetch downloads it again"),
                "\(unreadable.standardError)")
        #expect(try json(["--thumbnail", "16x", photo])["cache"] as? String == "none")
    }

    @Test func aRefreshOfAnImageNotKeptRemovesTheVariantsOfTheOldBytes() throws {
        let url = faults.baseURL + "/swap/photo.jpg/logo.png"
        _ = try json(["--no-original", "--thumbnail", "40x,20x", url])
        #expect(try json(["--refresh", "--no-original", "--thumbnail", "40x", url])["height"] as? Int == 30)
        // The 20-px one was the old photo's (20x13): gone, so it is made from the new bytes (20x15).
        let other = try json(["--no-original", "--thumbnail", "20x", url])
        #expect(other["height"] as? Int == 15 && other["cache"] as? String == "none", "\(other)")
        #expect(faults.requestCount(path: "/swap/photo.jpg/logo.png") == 3)
        // Unchanged (a 304 to the variants' validators): they stand, nothing is downloaded.
        let fresh = faults.baseURL + "/fresh/0/photo.jpg"
        let made = try json(["--no-original", "--thumbnail", "20x", fresh])
        let kept = try json(["--refresh", "--no-original", "--thumbnail", "20x", fresh])
        #expect(kept["cache"] as? String == "refreshed" && kept["path"] as? String == made["path"] as? String, "\(kept)")
        #expect(faults.requests.last?.header("If-None-Match") == "\"fresh-photo.jpg\"")
    }

    @Test func noVariantIsLargerThanItsFormatOrTheMachineHolds() throws {
        _ = try json([photo])
        let webp = try fetch(["fetch", "--fit", "fill", "--thumbnail", "16384x10", "--format", "webp", photo])
        #expect(webp.status == 1)
        #expect(webp.standardError.contains("a 16384×10 variant is larger than WebP allows (16383 pixels a side); the original stays"),
                "\(webp.standardError)")
        let huge = try fetch(["fetch", "--fit", "fill", "--max-pixels", "5G", "--thumbnail", "65535x65535", "--format", "png", photo])
        #expect(huge.status == 1)
        // Its encoder would need more than a decode may take: refused before a worker is asked.
        #expect(huge.standardError.contains("writing a 65535×65535 PNG would need about"), "\(huge.standardError)")
        #expect(huge.standardError.contains("more than a decode may take"), "\(huge.standardError)")
        #expect(try fetch(["fetch", "--fit", "fill", "--thumbnail", "16383x10", "--format", "webp", photo]).status == 0)
    }

    @Test func noVariantIsMadeLargerThanThePixelLimit() throws {
        _ = try json([photo])
        for arguments in [["--thumbnail", "65535x", "--upscale"], ["--thumbnail", "20000x20000", "--fit", "fill"],
                          ["--thumbnail", "960x", "--upscale", "--max-pixels", "100000"]] {
            let result = try fetch(["fetch"] + arguments + [photo])
            #expect(result.status == 1, "\(arguments): \(result.standardError)")
            #expect(result.standardError.contains("variant is over the limit of"), "\(result.standardError)")
            #expect(result.standardError.contains("(--max-pixels); the original stays in the cache"), "\(result.standardError)")
            #expect(!result.standardError.contains("pixels pixels"), "\(result.standardError)")
        }
        #expect(try fetch(["fetch", "--cache-only", photo]).status == 0)
        #expect(CacheInspection.storedFiles(under: cacheRoot + "/default").count == 1)
    }

    @Test func removeByKeyTakesTheVariantsOfAnyURLWithThatKey() throws {
        _ = try json(["--key-filter", "strip-query", "--thumbnail", "20x", photo + "?sig=1"])
        #expect(CacheInspection.storedFiles(under: cacheRoot + "/default").count == 2)
        let removed = try fetch(["remove", "--key-filter", "strip-query", photo + "?sig=2"])
        #expect(removed.status == 0, "\(removed.standardError)")
        #expect(CacheInspection.storedFiles(under: cacheRoot + "/default").isEmpty)
    }

    @Test func cleanDryRunSaysWhichFilesAreVariants() throws {
        _ = try json(["--thumbnail", "20x", photo])
        let planned = try fetch(["clean", "--dry-run", "--max-size", "1"])
        let lines = planned.lines.filter { $0.hasPrefix("would remove /") }
        #expect(lines.count == 2, "\(planned.output)")
        #expect(lines.filter { $0.hasSuffix(photo + " [imgcache-thumbnail(20x)-quality(85)]") }.count == 1, "\(planned.output)")
        #expect(lines.filter { $0.hasSuffix(photo) }.count == 1)
        let objects = try fetch(["--json", "clean", "--dry-run", "--max-size", "1"]).jsonLines().filter { $0["reason"] != nil }
        #expect(Set(objects.map { $0["transform"] as? String ?? "" }) == ["", "imgcache-thumbnail(20x)-quality(85)"])
    }

    @Test func srcsetListsEachWidthOnceAndOneSetPerFormat() throws {
        // 96 px wide: 200x and 300x both give 96.
        let result = try fetch(["fetch", "--srcset", "--thumbnail", "16x,48x,200x,300x", "--format", "webp,png", photo])
        #expect(result.status == 0, "\(result.standardError)")
        let sets = result.output.trimmingCharacters(in: .newlines).components(separatedBy: "\t")
        #expect(sets.count == 2, "\(result.output)")
        for (set, suffix) in zip(sets, [".webp", ".png"]) {
            let candidates = set.components(separatedBy: ", ")
            #expect(candidates.map { $0.split(separator: " ").last.map(String.init) } == ["16w", "48w", "96w"], "\(set)")
            #expect(candidates.allSatisfy { $0.split(separator: " ").first?.hasSuffix(suffix) == true }, "\(set)")
        }
    }

    @Test func jsonAndCacheInfoSpeakOfTheImageAsServed() throws {
        let line = try json(["--thumbnail", "16x", "--format", "webp", photo])
        #expect(line["format"] as? String == "webp" && line["content_type"] as? String == "image/jpeg", "\(line)")
        let info = try fetch(["--json", "cache-info"])
        let counts = try #require(try info.jsonLines().first)
        #expect(counts["downloads"] as? Int == 1 && counts["downloaded_bytes"] as? Int == 2203, "\(counts)")
        // A 304 brings no bytes.
        let fresh = faults.baseURL + "/fresh/0/photo.jpg"
        _ = try json([fresh])
        #expect(try json(["--refresh", fresh])["cache"] as? String == "refreshed")
        let after = try #require(try fetch(["--json", "cache-info"]).jsonLines().first)
        #expect(after["downloads"] as? Int == 3 && after["downloaded_bytes"] as? Int == 2 * 2203, "\(after)")
    }

    @Test func aSignalDoesNotWaitForAVariantBeingMade() throws {
        // A 6000x6000 picture: its near-full-size thumbnail takes many seconds to make, far
        // longer than a signal takes to arrive once the original has been found.
        let served = try TemporaryDirectory("imgcache-big")
        let pixels = [UInt8](repeating: 200, count: 6000 * 6000 * 4)
        let png = try ImageEncoder.encode(pixels[...], width: 6000, height: 6000, settings: ImageEncoder.Settings(format: .png))
        try Data(png).write(to: URL(fileURLWithPath: served.path + "/big.png"))
        let server = try FaultServer(directory: served.path)
        defer { server.stop() }
        let url = server.baseURL + "/image/big.png"
        #expect(try fetch(["fetch", url]).status == 0)
        let outputs = try TemporaryDirectory("imgcache-signal")
        let process = try ImgCacheProcess.startCapturing(["--cache-dir", cacheRoot, "-v", "--json", "fetch", "--thumbnail", "5999x", url],
                                                         home: home.path, outputs: outputs)
        // The original is found (a hit), then the variant is being made.
        for _ in 0..<2000 where !((try? String(contentsOfFile: outputs.path + "/stderr", encoding: .utf8)) ?? "").contains("hit: ") {
            usleep(5_000)
        }
        kill(process.processIdentifier, SIGTERM)
        let result = try ImgCacheProcess.result(of: process, outputs: outputs)
        #expect(result.status == 143, "\(result.standardError)")
        let line = try #require(try result.jsonLines().first)
        #expect((line["error"] as? String)?.contains("interrupted") == true, "\(line)")
        #expect(CacheInspection.temporaryFiles(under: cacheRoot).isEmpty)
    }
}
