import Foundation
import ImgCacheCore
import Testing

/// A site built with `fetch --html --output-dir`, then looked at in headless
/// Chromium (DevTools over a pipe, `Tests/Fixtures/browser/look.py`), served by
/// nginx: every image decodes, the browser picks the AVIF source at the width
/// the screen needs, animations move, each picture looks like its original as
/// the browser itself shows it, and a contact sheet shows every entry.
@Suite(.serialized) final class SiteTests {
    let work: TemporaryDirectory
    let site: String
    let cacheRoot: String
    let nginx: NginxServer
    /// The images served, from the site's own folder (so that a page may draw them on a canvas).
    static let originals = ["photo.jpg", "rotated.jpg", "logo.png", "anim.gif", "apng.png", "moving.webp", "formats/editor.svg"]
    static let animated: Set<String> = ["anim.gif", "apng.png", "moving.webp"]

    init() throws {
        work = try TemporaryDirectory("imgcache-site")
        site = work.appending("site")
        cacheRoot = work.appending("cache")
        try FileManager.default.createDirectory(atPath: site + "/orig", withIntermediateDirectories: true)
        for name in SiteTests.originals {
            try Paths.fixture(name).write(to: URL(fileURLWithPath: site + "/orig/" + (name as NSString).lastPathComponent))
        }
        nginx = try NginxServer(serving: URL(fileURLWithPath: site))
    }

    /// The picture's image of the original `name` on the page.
    static func selector(_ name: String) -> String { "[id=\"\((name as NSString).lastPathComponent)\"] img" }

    func url(_ name: String) -> String { nginx.url("orig/" + (name as NSString).lastPathComponent) }

    func imgcache(_ arguments: [String]) throws -> RunResult {
        try ImgCacheProcess.run(["--cache-dir", cacheRoot] + arguments, home: work.path, workingDirectory: work.path)
    }

    /// What `look.py` reports of `page` (a path under the site).
    func look(_ page: String, scale: Int = 1, evaluate: String, moving: [String] = [], screenshot: String? = nil) throws -> [String: Any] {
        let script = work.appending("evaluate.js")
        try evaluate.write(toFile: script, atomically: true, encoding: .utf8)
        var command = "python3 '\(Paths.repository.path)/Tests/Fixtures/browser/look.py' '\(nginx.url(page))' --scale \(scale)"
            + " --width 900 --height 1400 --evaluate '\(script)'"
        for selector in moving { command += " --moving '\(selector)'" }
        if let screenshot { command += " --screenshot '\(screenshot)'" }
        let result = try ImgCacheProcess.runShell(command, environment: [:], home: work.path, workingDirectory: work.path)
        #expect(result.status == 0, "\(result.standardError)")
        return try #require(try JSONSerialization.jsonObject(with: result.standardOutput) as? [String: Any], "\(result.output)")
    }

    /// Waits for every image of the page (lazy ones in view load too), then gives each `.case`'s picture:
    /// its source, natural width, and how far its pixels are from the original drawn at the same size:
    /// `diff`, the mean difference of a colour channel where both are opaque, and `alpha`, of opacity
    /// (0-255; -1 for an animation, whose frame depends on when it is drawn). The browser's resampling
    /// differs from imgcache's at soft edges, so opacity gets more room than colour.
    static let checkCases = """
        await Promise.all([...document.images].map(i => i.complete && i.naturalWidth ? 0
            : new Promise(r => { i.addEventListener('load', r); i.addEventListener('error', r); })));
        const out = [];
        for (const c of document.querySelectorAll('.case')) {
            const img = c.querySelector('img');
            let diff = -1, alpha = -1;
            if (c.dataset.still === '1' && img.naturalWidth > 0) {
                const ref = new Image();
                ref.src = c.dataset.ref;
                await ref.decode();
                const w = img.naturalWidth, h = img.naturalHeight;
                const draw = (source) => {
                    const canvas = document.createElement('canvas');
                    canvas.width = w; canvas.height = h;
                    const g = canvas.getContext('2d');
                    g.drawImage(source, 0, 0, w, h);
                    return g.getImageData(0, 0, w, h).data;
                };
                const a = draw(img), b = draw(ref);
                let sum = 0, opaque = 0, opacity = 0;
                for (let k = 0; k < a.length; k += 4) {
                    opacity += Math.abs(a[k + 3] - b[k + 3]);
                    if (a[k + 3] < 250 || b[k + 3] < 250) continue;
                    opaque++;
                    for (let j = 0; j < 3; j++) sum += Math.abs(a[k + j] - b[k + j]);
                }
                diff = opaque ? sum / (3 * opaque) : 0;
                alpha = opacity / (a.length / 4);
            }
            out.push({id: c.id, src: img.currentSrc, natural: img.naturalWidth, diff, alpha});
        }
        return out;
        """

    /// The page of one build: each URL's <picture> in a `.case` beside its original's address.
    func buildPage(_ extra: [String] = []) throws -> (markup: [String], page: String) {
        let list = work.appending("urls.txt")
        try SiteTests.originals.map(url).joined(separator: "\n").write(toFile: list, atomically: true, encoding: .utf8)
        let result = try imgcache(["fetch", "-i", list, "--thumbnail", "160x,320x", "--upscale", "--format", "avif,webp,jpeg", "--html",
                                   "--output-dir", site + "/img", "--site-root", site, "--sizes", "160px", "--placeholder", "color",
                                   "--keep-svg", "--alt", "a test image"] + extra)
        #expect(result.status == 0, "\(result.standardError)")
        let markup = result.output.split(separator: "\n").map(String.init)
        #expect(markup.count == SiteTests.originals.count)
        var page = "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><style>.case{display:inline-block;margin:4px}"
            + ".case img{width:160px;height:auto}</style></head><body>\n"
        for (index, (name, picture)) in zip(SiteTests.originals, markup).enumerated() {
            let base = (name as NSString).lastPathComponent
            page += "<div class=\"case\" id=\"\(base)\" data-ref=\"orig/\(base)\" data-still=\"\(SiteTests.animated.contains(base) ? 0 : 1)\">"
                + picture + "</div>\n"
            _ = index
        }
        try (page + "</body></html>\n").write(toFile: site + "/index.html", atomically: true, encoding: .utf8)
        return (markup, page)
    }

    @Test func aBuiltPageShowsEveryImageFromTheRightSourceUprightAndMoving() throws {
        let (markup, _) = try buildPage()
        // Markup a browser reads: a <source> per format that can show the image, the fallback <img>.
        #expect(markup[0].hasPrefix("<picture><source type=\"image/avif\" srcset=\"img/photo-160.") && markup[0].contains("alt=\"a test image\""))
        #expect(markup[0].contains("<source type=\"image/webp\"") && markup[0].contains("<img src=\"img/photo-320.")
                && markup[0].contains(".jpg\""), "\(markup[0])")
        // An animation has no JPEG: the WebP is its fallback.
        #expect(!markup[3].contains(".jpg") && markup[3].contains("<img src=\"img/anim-320."), "\(markup[3])")
        // The SVG passes through as SVG.
        #expect(markup[6].contains("src=\"img/editor-") && markup[6].contains(".svg\"") && !markup[6].contains("<source"), "\(markup[6])")

        let shot = Paths.repository.appendingPathComponent(".build/site-check").path
        try FileManager.default.createDirectory(atPath: shot, withIntermediateDirectories: true)
        let one = try look("index.html", scale: 1, evaluate: SiteTests.checkCases,
                           moving: SiteTests.originals.map { SiteTests.selector($0) },
                           screenshot: shot + "/site.png")
        let cases = try #require(one["value"] as? [[String: Any]])
        #expect(cases.count == SiteTests.originals.count)
        for item in cases {
            let id = item["id"] as? String ?? "", src = item["src"] as? String ?? ""
            #expect((item["natural"] as? Int ?? 0) > 0, "\(id) did not decode: \(item)")
            if id.hasSuffix(".svg") { continue }
            // At scale 1 the 160 px AVIF: the first source, the width the layout needs.
            #expect(src.contains("-160.") && src.hasSuffix(".avif"), "\(id): \(src)")
            // Upright, in the original's colours (rotated.jpg is turned by its EXIF orientation, as the browser turns its original).
            if let diff = item["diff"] as? Double, diff >= 0 { #expect(diff < 6, "\(id) differs from its original by \(diff) a channel") }
            if let alpha = item["alpha"] as? Double, alpha >= 0 { #expect(alpha < 16, "\(id)'s opacity differs by \(alpha)") }
        }
        let moving = try #require(one["moving"] as? [String: Bool])
        for name in SiteTests.originals {
            let base = (name as NSString).lastPathComponent
            #expect(moving[SiteTests.selector(name)] == SiteTests.animated.contains(base), "\(base) moving: \(moving)")
        }
        // At scale 2, the 320 px AVIF.
        let two = try look("index.html", scale: 2, evaluate: SiteTests.checkCases)
        for item in try #require(two["value"] as? [[String: Any]]) where !(item["id"] as? String ?? "").hasSuffix(".svg") {
            let src = item["src"] as? String ?? ""
            #expect(src.contains("-320.") && src.hasSuffix(".avif"), "\(item)")
        }
    }

    @Test func aRebuildFromTheWarmCacheWritesTheSamePageAndTouchesNoCopy() throws {
        let (first, _) = try buildPage()
        let folder = site + "/img"
        func stamps() throws -> [String: [Int]] {
            var found: [String: [Int]] = [:]
            for name in try FileManager.default.contentsOfDirectory(atPath: folder) {
                var info = stat()
                lstat(folder + "/" + name, &info)
                found[name] = [Int(info.st_ino), Int(info.st_mtim.tv_sec), Int(info.st_mtim.tv_nsec)]
            }
            return found
        }
        let before = try stamps()
        // With the server gone: every answer from the cache.
        nginx.stop()
        let (second, _) = try buildPage(["--cache-only"])
        #expect(second == first)
        #expect(try stamps() == before)
    }

    @Test func aContactSheetShowsEveryEntryAndTheFailures() throws {
        let list = work.appending("urls.txt")
        try (SiteTests.originals.map(url) + [nginx.url("orig/missing.png")]).joined(separator: "\n")
            .write(toFile: list, atomically: true, encoding: .utf8)
        let report = site + "/report.html"
        let prefetch = try imgcache(["prefetch", list, "--html-report", report])
        #expect(prefetch.status == 1, "\(prefetch.standardError)")
        // Looking is not using: a sheet marks nothing used and stores no thumbnail.
        let stored = CacheInspection.storedFiles(under: cacheRoot).sorted()
        let ages = Date(timeIntervalSinceNow: -5 * 86_400)
        for path in stored { try FileManager.default.setAttributes([.modificationDate: ages], ofItemAtPath: cacheRoot + "/" + path) }
        let sheet = try imgcache(["list", "--html"])
        #expect(sheet.status == 0, "\(sheet.standardError)")
        #expect(CacheInspection.storedFiles(under: cacheRoot).sorted() == stored)
        for path in stored {
            let modified = try FileManager.default.attributesOfItem(atPath: cacheRoot + "/" + path)[.modificationDate] as? Date
            #expect(modified.map { abs($0.timeIntervalSince(ages)) < 1 } == true, "\(path) was marked used")
        }
        try sheet.standardOutput.write(to: URL(fileURLWithPath: site + "/sheet.html"))
        let again = try imgcache(["list", "--html"])
        // The thumbnails come from the variant cache: the same bytes the second time.
        func thumbnails(_ html: String) -> [Substring] { html.split(separator: "\"").filter { $0.hasPrefix("data:image/webp") } }
        #expect(thumbnails(again.output) == thumbnails(sheet.output) && thumbnails(sheet.output).count == SiteTests.originals.count)
        // A pattern keeps the images it matches, and the failures it matches.
        let logos = try imgcache(["list", "--html", "--match", "*logo*"])
        #expect(thumbnails(logos.output).count == 1 && !logos.output.contains("missing.png"), "\(logos.standardError)")
        let count = """
            await Promise.all([...document.images].map(i => i.complete ? 0 : new Promise(r => { i.onload = i.onerror = r; })));
            return {images: document.images.length, decoded: [...document.images].filter(i => i.naturalWidth > 0).length,
                    failures: [...document.querySelectorAll('td.url')].map(t => t.textContent)};
            """
        for page in ["sheet.html", "report.html"] {
            let seen = try #require(try look(page, evaluate: count)["value"] as? [String: Any])
            #expect(seen["images"] as? Int == SiteTests.originals.count && seen["decoded"] as? Int == SiteTests.originals.count, "\(page): \(seen)")
            #expect(seen["failures"] as? [String] == [nginx.url("orig/missing.png")], "\(page): \(seen)")
        }
    }
}
