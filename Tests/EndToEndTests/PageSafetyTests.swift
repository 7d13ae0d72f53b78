import Foundation
import Testing

/// What a site build gets right where its inputs are hostile or its options meet: copies never leave
/// their folder or replace a link's target, a copy that was not made leaves no markup pointing at the
/// cache, markup stays one line per URL, `--keep-svg` holds whatever the cache saw before,
/// placeholders never show through transparent images, and a cache copied without its inodes is
/// still a cache.
@Suite final class PageSafetyTests {
    let served: TemporaryDirectory
    let work: TemporaryDirectory
    let nginx: NginxServer

    init() throws {
        served = try TemporaryDirectory("imgcache-pages-served")
        work = try TemporaryDirectory("imgcache-pages")
        for (fixture, name) in [("photo.jpg", "photo.jpg"), ("logo.png", "logo.png"), ("photo.jpg", "...jpg"), ("formats/editor.svg", "icon.svg"),
                                ("photo.jpg", "a/same.jpg"), ("rotated.jpg", "b/same.jpg")] {
            try FileManager.default.createDirectory(atPath: (served.appending(name) as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            try Paths.fixture(fixture).write(to: URL(fileURLWithPath: served.appending(name)))
        }
        nginx = try NginxServer(serving: served.url)
    }

    func imgcache(_ arguments: [String], cache: String = "cache", environment: [String: String] = [:]) throws -> RunResult {
        try ImgCacheProcess.run(["--cache-dir", work.appending(cache)] + arguments, environment: environment, home: work.path,
                                workingDirectory: work.path)
    }

    /// Every file under `folder`, relative to it.
    func files(under folder: String) -> [String] {
        (FileManager.default.enumerator(atPath: folder)?.allObjects as? [String] ?? [])
            .filter { !((try? FileManager.default.attributesOfItem(atPath: folder + "/" + $0)[.type] as? FileAttributeType) == .typeDirectory) }
            .sorted()
    }

    /// A sweep of hostile file names (dot names, leading dots, spaces, dashes, a right-to-left override),
    /// each asked as it is and with every byte percent-encoded, through templates that put `{stem}` in
    /// folders: every copy lands inside the output folder, in no hidden file or folder.
    @Test func aURLsFileNameNeverTakesACopyOutOfItsFolder() throws {
        let names = ["...jpg", "..jpg", ".jpg", "....jpg", " .jpg", "-rf.jpg", ".hidden.png", "a..b.jpg", "x\u{202E}gpj.jpg", "%2e.jpg"]
        for name in names { try Paths.fixture("photo.jpg").write(to: URL(fileURLWithPath: served.appending(name))) }
        func encoded(_ name: String, all: Bool) -> String {
            name.utf8.map { byte in
                let plain = (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A) || byte == 0x2E || byte == 0x2D
                return plain && !(all && byte == 0x2E) ? String(UnicodeScalar(byte)) : "%" + String(byte, radix: 16, uppercase: true)
            }.joined()
        }
        let urls = names.flatMap { [nginx.url(encoded($0, all: false)), nginx.url(encoded($0, all: true))] }
        let out = work.appending("deep/out")
        for template in ["{stem}/{hash8}.{ext}", "{stem}/{stem}/{stem}.{ext}", "{stem}.{urlhash8}.{ext}"] {
            let result = try imgcache(["fetch", "--output-dir", out, "--name", template] + urls)
            #expect(result.status == 0, "\(template): \(result.standardError)")
            #expect(result.lines.count == urls.count)
        }
        // Everything under the output folder, nothing beside or above it, nothing hidden, blank at an end or
        // shown other than it is.
        let written = files(under: work.appending("deep"))
        #expect(!written.isEmpty && written.allSatisfy { $0.hasPrefix("out/") }, "\(written)")
        for part in written.flatMap({ $0.split(separator: "/") }) {
            #expect(!part.hasPrefix(".") && part.first?.isWhitespace != true && part.last?.isWhitespace != true
                    && !part.unicodeScalars.contains { (0x202A...0x202E).contains($0.value) }, "\(part) in \(written)")
        }
    }

    @Test func aCopyThatCannotBeMadeLeavesNoMarkupPointingAtTheCache() throws {
        let out = work.appending("site/img"), site = work.appending("site")
        // Two images, one name.
        let clash = try imgcache(["fetch", "--html", "--output-dir", out, "--site-root", site, "--name", "{stem}.{ext}",
                                  nginx.url("a/same.jpg"), nginx.url("b/same.jpg")])
        #expect(clash.status == 74)
        let lines = clash.output.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        #expect(lines.count == 2 && lines[0].hasPrefix("<picture>") && lines[1].isEmpty, "\(clash.output)")
        #expect(!clash.output.contains("cache/"))
        let json = try imgcache(["--json", "fetch", "--output-dir", work.appending("other"), "--name", "{stem}.{ext}",
                                 nginx.url("a/same.jpg"), nginx.url("b/same.jpg")]).jsonLines()
        #expect(json[0]["copy_error"] == nil && json[1]["copy_error"] as? String != nil, "\(json)")
        // No address for a copy not made: JSON never points a page at the cache either, and says why.
        #expect((json[1]["copy_error"] as? String)?.contains("put {hash8} in --name") == true && json[1]["page_url"] == nil, "\(json[1])")
        // Across runs too: a later run does not give b's image the name a's copy has (the copy says whose it is).
        let later = try imgcache(["fetch", "--html", "--output-dir", out, "--site-root", site, "--name", "{stem}.{ext}", nginx.url("b/same.jpg")])
        #expect(later.status == 74 && later.output == "\n" && later.standardError.contains("from an earlier run"), "\(later.standardError)")
        #expect(FileManager.default.contents(atPath: out + "/same.jpg") == (try Paths.fixture("photo.jpg")))
        // The same URL's new bytes do replace its copy.
        try Paths.fixture("rotated.jpg").write(to: URL(fileURLWithPath: served.appending("a/same.jpg")))
        #expect(try imgcache(["fetch", "--refresh", "--output-dir", out, "--name", "{stem}.{ext}", nginx.url("a/same.jpg")]).status == 0)
        #expect(FileManager.default.contents(atPath: out + "/same.jpg") == (try Paths.fixture("rotated.jpg")))
        // A name whose extension is not the copy's own is refused before anything is fetched.
        let wrong = try imgcache(["fetch", "--html", "--output-dir", work.appending("wrong"), "--name", "{stem}.png", nginx.url("photo.jpg")])
        #expect(wrong.status == 64 && wrong.standardError.contains("must end with {ext}"), "\(wrong.standardError)")
    }

    @Test func markupStaysOneLinePerURLWhateverItsText() throws {
        let table = work.appending("alt.csv")
        try "url,caption\n\(nginx.url("photo.jpg")),\"two\nlines \u{1} and \u{2028}\"\n\(nginx.url("logo.png")),plain\n"
            .write(toFile: table, atomically: true, encoding: .utf8)
        let result = try imgcache(["fetch", "-i", table, "--html", "--alt-column", "caption", "--thumbnail", "32x"])
        #expect(result.status == 0, "\(result.standardError)")
        let lines = result.output.split(separator: "\n")
        #expect(lines.count == 2 && lines[0].contains("alt=\"two&#10;lines \u{FFFD} and &#8232;\""), "\(result.output)")
        // A column the table's header does not name is an error before anything is fetched (no page of empty alts).
        let misspelt = try imgcache(["fetch", "-i", table, "--html", "--alt-column", "captoin", "--thumbnail", "32x"])
        #expect(misspelt.status == 64 && misspelt.output.isEmpty, "\(misspelt.status) \(misspelt.output)")
        #expect(misspelt.standardError.contains("has no column 'captoin' (--alt-column); its header names 'url', 'caption'; did you mean 'caption'?"),
                "\(misspelt.standardError)")
        // The main image of a page: eager, high priority.
        let hero = try imgcache(["fetch", "--html", "--loading", "eager", "--fetchpriority", "high", nginx.url("photo.jpg")])
        #expect(hero.output.contains("loading=\"eager\" decoding=\"async\" fetchpriority=\"high\""), "\(hero.output)")
    }

    @Test func keepSVGHoldsWhateverTheCacheSawBefore() throws {
        let raster = try imgcache(["fetch", "--html", "--thumbnail", "64x", "--format", "webp,png", nginx.url("icon.svg")])
        #expect(raster.output.contains("image/webp"))
        let kept = try imgcache(["fetch", "--html", "--keep-svg", "--thumbnail", "64x", "--format", "webp,png", nginx.url("icon.svg")])
        #expect(kept.status == 0 && !kept.output.contains("<source") && kept.output.contains(".svg\""), "\(kept.output)")
        let json = try imgcache(["--json", "fetch", "--keep-svg", "--thumbnail", "64x", nginx.url("icon.svg")]).jsonLines()
        #expect(json.first?["format"] as? String == "svg", "\(json)")
        // --srcset keeps its columns: the SVG in the last (the fallback's), the others empty.
        let columns = try imgcache(["fetch", "--srcset", "--keep-svg", "--thumbnail", "64x", "--format", "avif,webp,png", nginx.url("icon.svg")])
            .output.trimmingCharacters(in: .newlines).split(separator: "\t", omittingEmptySubsequences: false)
        #expect(columns.count == 3 && columns[0].isEmpty && columns[1].isEmpty && columns[2].contains(".svg "), "\(columns)")
    }

    /// An SVG that would run script or load another document when opened on its own (as a page of
    /// the site) is not passed through: its raster variants are made, and the run says why; the
    /// site's folder holds no SVG of it. An inert one still passes through.
    @Test func keepSVGPassesThroughOnlyAnInertSVG() throws {
        let svg = String(decoding: try Paths.fixture("formats/editor.svg"), as: UTF8.self)
        let hostile = svg.replacingOccurrences(of: "<svg ", with: "<svg onload=\"alert(document.domain)\" ")
            .replacingOccurrences(of: "</svg>", with: "<script>fetch('/steal')</script></svg>")
        try hostile.write(toFile: served.appending("hostile.svg"), atomically: true, encoding: .utf8)
        let out = work.appending("site")
        for run in 0..<2 {
            let result = try imgcache(["fetch", "--html", "--keep-svg", "--output-dir", out, "--thumbnail", "64x", "--format", "webp,png",
                                       nginx.url("hostile.svg"), nginx.url("icon.svg")])
            #expect(result.status == 0, "\(result.standardError)")
            let lines = result.output.split(separator: "\n")
            #expect(lines.count == 2 && lines[0].contains("image/webp") && !lines[0].contains(".svg\""), "run \(run): \(result.output)")
            #expect(lines[1].contains(".svg\"") && !lines[1].contains("<source"), "run \(run): \(result.output)")
            #expect(result.standardError.contains("hostile.svg: not passed through as SVG (--keep-svg): it holds an event handler (onload)")
                    || run == 1, "run \(run): \(result.standardError)")
            let svgs = files(under: out).filter { $0.hasSuffix(".svg") }
            #expect(svgs.count == 1, "run \(run): \(files(under: out))")
            for name in svgs {
                let copied = try String(contentsOfFile: out + "/" + name, encoding: .utf8)
                #expect(!copied.contains("<script") && !copied.contains("onload"), "\(name)")
            }
        }
    }

    /// Copied as it is (no variant asked, with --keep-svg or without): a hostile SVG is not copied into
    /// the site, the run says why and exits 74 (its markup line empty); an inert one is copied.
    @Test func aHostileSVGIsNotCopiedIntoTheSiteEvenWithoutVariants() throws {
        let svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"100\" height=\"100\"><rect width=\"100\" height=\"100\"/><script>alert(1)</script></svg>"
        try svg.write(toFile: served.appending("script.svg"), atomically: true, encoding: .utf8)
        for extra in [["--keep-svg"], []] {
            let out = work.appending("plain-site" + extra.joined())
            let result = try imgcache(["fetch", "--html", "--output-dir", out] + extra + [nginx.url("script.svg"), nginx.url("icon.svg")])
            #expect(result.status == 74, "\(extra): \(result.status) \(result.standardError)")
            #expect(result.standardError.contains("script.svg: not copied: the SVG holds a <script> element"), "\(result.standardError)")
            let lines = result.output.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.first == "" && lines.count >= 2 && lines[1].contains(".svg\""), "\(result.output)")
            #expect(files(under: out).filter { $0.contains("script") }.isEmpty, "\(files(under: out))")
        }
    }

    /// Markup in an encoding a browser reads otherwise than as bytes (ISO-2022-JP: an escape that
    /// decodes to nothing splits `script`, and the copy ran its script on the site's origin) is not
    /// passed through: with `--keep-svg` and variants it gets the variants, without them it is not copied.
    @Test(arguments: ["<scr\u{1B}(Bipt>document.title=1</scr\u{1B}(Bipt>", "<rect o\u{1B}(Bnload=\"document.title=1\" width=\"10\" height=\"10\"/>"])
    func anSVGInAnEncodingThatHidesScriptIsNotPassedThrough(body: String) throws {
        let svg = "<?xml version=\"1.0\" encoding=\"ISO-2022-JP\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\">"
            + body + "<rect width=\"10\" height=\"10\"/></svg>"
        try svg.write(toFile: served.appending("shifted.svg"), atomically: true, encoding: .utf8)
        let withVariants = work.appending("shifted-site")
        let kept = try imgcache(["fetch", "--html", "--keep-svg", "--thumbnail", "8x", "--format", "png", "--output-dir", withVariants,
                                 nginx.url("shifted.svg")])
        #expect(kept.standardError.contains("shifted.svg: not passed through as SVG (--keep-svg): it holds an escape byte"), "\(kept.standardError)")
        #expect(files(under: withVariants).allSatisfy { !$0.hasSuffix(".svg") }, "\(files(under: withVariants))")
        let plain = work.appending("shifted-plain")
        let copied = try imgcache(["fetch", "--keep-svg", "--output-dir", plain, nginx.url("shifted.svg")])
        #expect(copied.status == 74 && copied.standardError.contains("not copied: the SVG holds an escape byte"), "\(copied.status) \(copied.standardError)")
        #expect(files(under: plain).isEmpty, "\(files(under: plain))")
    }

    /// An animation's stills (its JPEG and PNG variants, which no page picks when a format keeps
    /// the frames) are not copied into the site nor offered in --srcset; asked in stills only, it keeps them.
    @Test func anAnimationsStillsAreNeitherCopiedNorOffered() throws {
        try Paths.fixture("anim.gif").write(to: URL(fileURLWithPath: served.appending("anim.gif")))
        let out = work.appending("moving-site")
        let page = try imgcache(["fetch", "--html", "--output-dir", out, "--thumbnail", "16x,32x", "--format", "webp,jpeg", nginx.url("anim.gif")])
        #expect(page.status == 0 && !page.output.contains(".jpg"), "\(page.output)")
        #expect(files(under: out).allSatisfy { $0.hasSuffix(".webp") } && files(under: out).count == 2, "\(files(under: out))")
        let srcset = try imgcache(["fetch", "--srcset", "--thumbnail", "16x,32x", "--format", "webp,jpeg", nginx.url("anim.gif")])
        #expect(!srcset.output.contains(".jpg") && srcset.output.split(separator: "\t", omittingEmptySubsequences: false).count == 2,
                "\(srcset.output)")
        // Each variant's address in --json is its own (its format's extension, its width), the stills none;
        // --srcset keeps a column per format asked, in order, narrowest first (the stills' column empty).
        let json = try imgcache(["--json", "fetch", "--output-dir", work.appending("json-site"), "--thumbnail", "32x,16x,24x",
                                 "--format", "avif,webp,jpeg", nginx.url("anim.gif")]).jsonLines()
        let variants = json.first?["variants"] as? [[String: Any]] ?? []
        #expect(variants.count == 9, "\(json)")
        for variant in variants {
            let format = variant["format"] as? String ?? "", url = variant["url"] as? String
            if format == "jpeg" {
                #expect(url == nil && variant["copy"] == nil, "\(variant)")
            } else {
                #expect(url?.hasSuffix("." + format) == true && url?.contains("-\(variant["width"] as? Int ?? 0).") == true, "\(variant)")
            }
        }
        let columns = try imgcache(["fetch", "--srcset", "--thumbnail", "32x,16x", "--format", "avif,jpeg,webp", nginx.url("anim.gif")])
            .output.trimmingCharacters(in: .newlines).split(separator: "\t", omittingEmptySubsequences: false)
        #expect(columns.count == 3 && columns[1].isEmpty && columns[0].contains(".avif 16w, ") && columns[2].contains(".webp 16w, "), "\(columns)")
        let stills = try imgcache(["fetch", "--srcset", "--thumbnail", "16x", "--format", "jpeg", nginx.url("anim.gif")])
        #expect(stills.output.contains(".jpg"), "\(stills.output)")
    }

    /// --prune removes the copies a run no longer names, only files the template could have made:
    /// the site's own files, and copies another template named, stay.
    @Test func pruneRemovesOnlyTheCopiesNoPageNamesAnyMore() throws {
        let out = work.appending("pruned-site")
        #expect(try imgcache(["fetch", "--html", "--output-dir", out, "--thumbnail", "32x,64x", nginx.url("photo.jpg"), nginx.url("logo.png")]).status == 0)
        // The site's own files: names the template could have made among them (not imgcache's copies all the same).
        for name in ["notes.txt", "photo-640.jpg", "logo-64.zzzzzzzz.png", "hero-1280.deadbeef.jpg"] {
            FileManager.default.createFile(atPath: out + "/" + name, contents: Data("mine".utf8))
        }
        let before = files(under: out)
        #expect(before.filter { $0.hasPrefix("logo-") }.count == 3, "\(before)")
        let again = try imgcache(["fetch", "--html", "--prune", "--output-dir", out, "--thumbnail", "32x,64x", nginx.url("photo.jpg")])
        #expect(again.status == 0, "\(again.standardError)")
        let after = files(under: out)
        #expect(after.filter { $0.hasPrefix("logo-") } == ["logo-64.zzzzzzzz.png"], "\(after)")
        #expect(after.filter { $0.hasPrefix("photo-") }.count == before.filter { $0.hasPrefix("photo-") }.count, "\(after)")
        #expect(after.contains("notes.txt") && after.contains("photo-640.jpg") && after.contains("hero-1280.deadbeef.jpg"), "\(after)")
        #expect(again.standardError.contains("--prune: 2 copies no longer named removed"), "\(again.standardError)")
        // A run where a URL failed removes nothing: the failed URL's copies are what its page still shows.
        let failing = try imgcache(["fetch", "--html", "--prune", "--output-dir", out, "--thumbnail", "32x,64x", nginx.url("missing.jpg")])
        #expect(failing.status == 1, "\(failing.standardError)")
        #expect(failing.standardError.contains("--prune: nothing removed, since not every URL was answered with its image (exit status 1)"),
                "\(failing.standardError)")
        #expect(files(under: out) == after, "\(files(under: out))")
        // Nor does one that named nothing (a list of comments only): the folder is not emptied.
        let empty = work.appending("empty.txt")
        try "# no images this time\n".write(toFile: empty, atomically: true, encoding: .utf8)
        let none = try imgcache(["fetch", "--html", "--prune", "--output-dir", out, "--thumbnail", "32x,64x", "-i", empty])
        #expect(none.status == 0 && none.standardError.contains("--prune: nothing removed, since the run named no copy"), "\(none.standardError)")
        #expect(files(under: out) == after, "\(files(under: out))")
        #expect(try imgcache(["fetch", "--prune", nginx.url("photo.jpg")]).status == 64)
    }

    /// Copies of formats copied as they are (SVG, TIFF) are pruned as the written ones are; a copy
    /// the site made of a copy (`cp -a`, which keeps its attribute) under another name is the site's.
    @Test func pruneRemovesCopiesOfEveryFormatButNotTheSitesDuplicates() throws {
        let svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"50\" height=\"40\"><rect width=\"50\" height=\"40\" fill=\"red\"/></svg>"
        try svg.write(toFile: served.appending("mark.svg"), atomically: true, encoding: .utf8)
        try Paths.fixture("scan.tiff").write(to: URL(fileURLWithPath: served.appending("scan.tiff")))
        let out = work.appending("pruned-formats")
        let first = try imgcache(["fetch", "--html", "--keep-svg", "--output-dir", out, "--thumbnail", "32x", "--format", "webp",
                                  nginx.url("mark.svg"), nginx.url("photo.jpg")])
        #expect(first.status == 0, "\(first.standardError)")
        let plainOut = work.appending("pruned-plain")
        #expect(try imgcache(["fetch", "--output-dir", plainOut, nginx.url("scan.tiff"), nginx.url("logo.png")]).status == 0)
        #expect(files(under: plainOut).contains { $0.hasSuffix(".tiff") }, "\(files(under: plainOut))")
        let copies = files(under: out)
        guard let svgCopy = copies.first(where: { $0.hasSuffix(".svg") }), let webp = copies.first(where: { $0.hasSuffix(".webp") }) else {
            Issue.record("\(copies)")
            return
        }
        // The site's duplicate of a copy, under a name the template could have made, its attribute and all.
        let duplicate = webp.replacingOccurrences(of: "photo-", with: "backup-")
        #expect(try ImgCacheProcess.runShell("cp -a '\(out)/\(webp)' '\(out)/\(duplicate)'", environment: [:], home: work.path,
                                             workingDirectory: work.path).status == 0)
        let pruned = try imgcache(["fetch", "--html", "--keep-svg", "--prune", "--output-dir", out, "--thumbnail", "32x", "--format", "webp",
                                   nginx.url("photo.jpg")])
        #expect(pruned.status == 0, "\(pruned.standardError)")
        let after = files(under: out)
        #expect(!after.contains(svgCopy) && after.contains(webp) && after.contains(duplicate), "\(after)")
        let plain = try imgcache(["fetch", "--prune", "--output-dir", plainOut, nginx.url("logo.png")])
        #expect(plain.status == 0 && !files(under: plainOut).contains { $0.hasSuffix(".tiff") }, "\(files(under: plainOut))")
    }

    /// A page whose image only browsers few show (a TIFF copied as it is) says so, once; with a
    /// format browsers show, nothing is said.
    @Test func aPageOfAFormatBrowsersDoNotShowIsSaid() throws {
        try Paths.fixture("scan.tiff").write(to: URL(fileURLWithPath: served.appending("scan.tiff")))
        let tiff = try imgcache(["fetch", "--html", "--output-dir", work.appending("tiff-site"), nginx.url("scan.tiff")])
        #expect(tiff.status == 0 && tiff.standardError.contains("its <img> is TIFF, which most browsers do not show: give --format webp"),
                "\(tiff.standardError)")
        let webp = try imgcache(["fetch", "--html", "--format", "webp", "--output-dir", work.appending("webp-site"), nginx.url("scan.tiff")])
        #expect(webp.status == 0 && !webp.standardError.contains("do not show"), "\(webp.standardError)")
    }

    @Test func aPlaceholderNeverShowsThroughATransparentImage() throws {
        try Paths.fixture("anim.gif").write(to: URL(fileURLWithPath: served.appending("anim.gif")))
        let result = try imgcache(["fetch", "--html", "--placeholder", "color", "--thumbnail", "32x", nginx.url("photo.jpg"), nginx.url("logo.png"),
                                   nginx.url("anim.gif")])
        let lines = result.output.split(separator: "\n")
        // Nor behind an animation, whose later frames may be transparent where its first is not.
        #expect(lines[0].contains("style=\"background-color:#") && !lines[1].contains("style=") && !lines[2].contains("style="), "\(result.output)")
        // Nor through the clear padding of --fit contain (an opaque photo in a box of another shape); with a
        // --background the padding is opaque, and the placeholder is there again.
        for placeholder in ["color", "lqip"] {
            let padded = try imgcache(["fetch", "--html", "--placeholder", placeholder, "--fit", "contain", "--thumbnail", "32x32,64x64",
                                       "--format", "webp,png", nginx.url("photo.jpg")])
            #expect(padded.status == 0 && !padded.output.contains("style="), "\(padded.output)")
        }
        let filled = try imgcache(["fetch", "--html", "--placeholder", "color", "--fit", "contain", "--background", "#202020",
                                   "--thumbnail", "32x32", "--format", "webp", nginx.url("photo.jpg")])
        #expect(filled.output.contains("style=\"background-color:#"), "\(filled.output)")
    }

    @Test func aLinkInTheOutputFolderIsReplacedNotWrittenThrough() throws {
        let out = work.appending("linked"), victim = work.appending("victim.txt")
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        try "mine".write(toFile: victim, atomically: true, encoding: .utf8)
        #expect(symlink("../victim.txt", out + "/photo.jpg") == 0)
        #expect(try imgcache(["fetch", "--output-dir", out, "--name", "{stem}.{ext}", nginx.url("photo.jpg")]).status == 0)
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "mine")
        #expect(FileManager.default.contents(atPath: out + "/photo.jpg") == (try Paths.fixture("photo.jpg")))
        // Nor is a link in a folder's place (`sub/` from --name) followed out of the output folder.
        try FileManager.default.createDirectory(atPath: work.appending("elsewhere"), withIntermediateDirectories: true)
        #expect(symlink("../elsewhere", out + "/sub") == 0)
        let folder = try imgcache(["fetch", "--output-dir", out, "--name", "sub/{stem}.{ext}", nginx.url("photo.jpg")])
        #expect(folder.status == 74 && folder.standardError.contains("never followed out of --output-dir"), "\(folder.standardError)")
        #expect(files(under: work.appending("elsewhere")).isEmpty)
    }

    @Test func addressesAreSaidWhenTheyLeaveTheSite() throws {
        let result = try imgcache(["fetch", "--html", "--site-root", work.appending("public"), nginx.url("photo.jpg")])
        #expect(result.standardError.contains("is outside --site-root"), "\(result.standardError)")
        let prefixed = try imgcache(["fetch", "--html", "--thumbnail", "16x,32x", "--output-dir", work.appending("p"),
                                     "--url-prefix", "https://cdn.example/a b/", nginx.url("photo.jpg")])
        #expect(prefixed.output.contains("https://cdn.example/a%20b/photo-16."), "\(prefixed.output)")
        let controls = try imgcache(["fetch", "--srcset", "--thumbnail", "16x,32x", "--output-dir", work.appending("p"),
                                     "--url-prefix", "/a\tb\nc/", nginx.url("photo.jpg")])
        #expect(controls.output.split(separator: "\n").count == 1 && controls.output.contains("/a%09b%0Ac/photo-16."), "\(controls.output)")
    }

    /// A cache kept in files (`IMGCACHE_METADATA=files`) and copied by a tool that keeps no inodes (a CI
    /// cache restored by tar) is still every entry and variant: nothing downloaded, nothing removed.
    @Test func aCacheCopiedWithNewInodesIsStillACache() throws {
        let files = ["IMGCACHE_METADATA": "files"]
        let build = ["fetch", "--html", "--thumbnail", "32x,64x", "--format", "webp,jpeg", nginx.url("photo.jpg"), nginx.url("logo.png")]
        let first = try imgcache(build, cache: "ci/cache", environment: files)
        #expect(first.status == 0, "\(first.standardError)")
        // cp without -a: every file anew, new inodes.
        let copy = Process()
        copy.executableURL = URL(fileURLWithPath: "/bin/cp")
        copy.arguments = ["-r", work.appending("ci/cache"), work.appending("restored")]
        try copy.run()
        copy.waitUntilExit()
        let requests = nginx.requests.count
        let again = try imgcache(build + ["--cache-only"], cache: "restored", environment: files)
        #expect(again.status == 0 && again.output == first.output.replacing(work.appending("ci/cache"), with: work.appending("restored")),
                "\(again.standardError)")
        #expect(nginx.requests.count == requests)
    }
}
