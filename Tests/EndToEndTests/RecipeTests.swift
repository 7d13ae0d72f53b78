import Foundation
import ImgCacheCore
import Testing

/// Every recipe in README.md and Docs/ is a promise: each ```sh block (and
/// each command of a ```cron block) runs here, in the document's order, under
/// `bash -euo pipefail`, against nginx on loopback standing in for
/// example.com and cdn.example, its WebDAV store standing in for cache.lan,
/// and for Docs/FLEET.md a redis-server and moto's S3 server standing in for
/// the fleet's stores. A block whose fence says `no-test` (README's `make
/// test`, which is this suite) is the only kind left out.
@Suite final class RecipeTests {
    /// One fenced block of a document.
    struct Recipe: CustomStringConvertible {
        let document: String
        let line: Int
        let language: String
        let text: String

        var description: String { "\(document):\(line)" }
    }

    /// The documents whose recipes run; `everyDocumentWithRecipesIsCovered` keeps the list whole.
    static let documents = ["README.md", "Docs/USAGE.md", "Docs/OPTIONS.md", "Docs/FLEET.md", "Docs/DATASETS.md", "Docs/SITES.md",
                            "Docs/SERVE.md"]

    /// The runnable blocks of `document`: fenced `sh` or `cron`, not `no-test`.
    static func recipes(in document: String) throws -> [Recipe] {
        let text = try String(contentsOf: Paths.repository.appendingPathComponent(document), encoding: .utf8)
        var recipes: [Recipe] = []
        var open: (line: Int, info: String)?
        var body: [String] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            guard line.hasPrefix("```") else {
                if open != nil { body.append(String(line)) }
                continue
            }
            if let block = open {
                let words = block.info.split(separator: " ").map(String.init)
                if let language = words.first, ["sh", "cron"].contains(language), !words.contains("no-test") {
                    recipes.append(Recipe(document: document, line: block.line, language: language, text: body.joined(separator: "\n")))
                }
                open = nil
                body = []
            } else {
                open = (index + 1, String(line.dropFirst(3)))
            }
        }
        return recipes
    }

    let origin: NginxServer
    let docroot: TemporaryDirectory
    let work: TemporaryDirectory
    let home: TemporaryDirectory
    var cacheRoot: String { home.appending("cache") }
    /// The fleet's stores, started for the document that names them.
    var redis: RedisServer?
    var s3: S3Server?

    init() throws {
        docroot = try TemporaryDirectory("imgcache-recipe-site")
        work = try TemporaryDirectory("imgcache-recipe-work")
        home = try TemporaryDirectory("imgcache-recipe-home")
        for (source, name) in [("logo.png", "logo.png"), ("photo.jpg", "photo.jpg"), ("anim.gif", "anim.gif"),
                               ("sticker.webp", "sticker.webp"), ("photo.jpg", "a.jpg"), ("formats/editor.svg", "poster.svg")] {
            try FileManager.default.copyItem(atPath: Paths.fixtures.appendingPathComponent(source).path, toPath: docroot.appending(name))
        }
        // A photo large enough that a page's choice of file shows (README's "For a site"): 2400x1600.
        let (width, height) = (2400, 1600)
        var pixels = [UInt8](repeating: 255, count: width * height * 4)
        for y in 0..<height { for x in 0..<width { pixels[(y * width + x) * 4] = UInt8(x * 255 / width); pixels[(y * width + x) * 4 + 1] = UInt8(y * 255 / height) } }
        let landscape = try ImageEncoder.encode(pixels[...], width: width, height: height, settings: ImageEncoder.Settings(format: .jpeg, quality: 80))
        try Data(landscape).write(to: URL(fileURLWithPath: docroot.appending("landscape.jpg")))
        origin = try NginxServer(serving: docroot.url)
        let base = origin.url("").dropLast()
        let images = ["logo.png", "photo.jpg", "anim.gif", "sticker.webp"].map { "\(base)/\($0)" }
        try write(docroot.appending("sitemap.xml"), """
            <?xml version="1.0" encoding="UTF-8"?>
            <urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
            <url><loc>\(base)/</loc>\(images.map { "<image:image><image:loc>\($0)</image:loc></image:image>" }.joined())</url>
            </urlset>
            """)
        let page = "<html><body>" + images.map { "<img src=\"\($0)\">" }.joined() + "</body></html>\n"
        try write(docroot.appending("index.html"), page)
        try write(work.appending("page.html"), page)
        try write(work.appending("urls.txt"), images.joined(separator: "\n") + "\n")
        try FileManager.default.createDirectory(atPath: work.appending("content"), withIntermediateDirectories: true)
        try write(work.appending("content/images.txt"), images.prefix(2).joined(separator: "\n") + "\n")
        try FileManager.default.createDirectory(atPath: work.appending("shipped"), withIntermediateDirectories: true)
    }

    deinit { origin.stop() }

    /// The port SERVE.md's recipes listen on instead of 8080.
    lazy var servePort: Int = (try? NginxServer.freePort()) ?? 18_080

    func write(_ path: String, _ text: String) throws {
        try text.write(toFile: path, atomically: false, encoding: .utf8)
    }

    /// The recipe as it runs here: the example hosts become the local server,
    /// the shipped folder a folder of the test's; a cron line loses its schedule.
    func runnable(_ recipe: Recipe) -> String {
        let base = String(origin.url("").dropLast())
        var text = recipe.text
            .replacing("http://cache.lan/imgcache", with: origin.url("store"))
            .replacing("http://cache.lan/datasets", with: origin.url("datasets"))
        if let redis { text = text.replacing("redis://cache.lan:6379", with: redis.url) }
        if let s3 {
            text = text.replacing("https://s3.eu-west-1.amazonaws.com", with: s3.endpoint)
                .replacing("AKIAEXAMPLEKEY", with: s3.accessKey).replacing("EXAMPLESECRET", with: s3.secretKey)
        }
        text = text
            .replacing("https://example.com", with: base)
            .replacing("https://cdn.example", with: base)
            .replacing("/usr/share/app/images", with: work.appending("shipped"))
            // The installed binary's full path (as cron needs it) is the one under test.
            .replacing("/usr/local/bin/imgcache", with: "imgcache")
            // A server's port, free here; its sources are on loopback here, which a server refuses unless told.
            .replacing("127.0.0.1:8080", with: "127.0.0.1:\(servePort)")
            .replacing("imgcache serve ", with: "imgcache serve --allow-private-sources ")
        if recipe.language == "cron" {
            text = text.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }
                .map { $0.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true).last.map(String.init) ?? "" }
                .joined(separator: "\n")
        }
        return "set -euo pipefail\n" + text
    }

    func run(_ recipe: Recipe) throws -> RunResult {
        let binary = URL(fileURLWithPath: Paths.binary).deletingLastPathComponent().path
        // The python3 the harness installed its packages for (pyarrow), where it is not /usr/bin's.
        let python = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
            .first { FileManager.default.isExecutableFile(atPath: "\($0)/python3") }.map { "\($0):" } ?? ""
        return try ImgCacheProcess.runShell(runnable(recipe), environment: ["PATH": "\(binary):\(python)/usr/bin:/bin", "IMGCACHE_DIR": cacheRoot],
                                            home: home.path, workingDirectory: work.path)
    }

    func format(_ path: String) -> ImageFormat? {
        (try? Data(contentsOf: URL(fileURLWithPath: path))).flatMap { ImageFormat.sniff([UInt8]($0)) }
    }

    @Test(arguments: documents)
    func everyRecipeRuns(document: String) throws {
        let recipes = try Self.recipes(in: document)
        #expect(!recipes.isEmpty)
        if document == "Docs/FLEET.md" {
            redis = try RedisServer(password: "change-me")
            s3 = try S3Server(bucket: "imgcache-fleet")
        }
        if document == "Docs/DATASETS.md" { s3 = try S3Server(bucket: "datasets") }
        for recipe in recipes {
            let result = try run(recipe)
            #expect(result.status == 0, "\(recipe) exited \(result.status):\n\(recipe.text)\n\(result.standardError)")
        }
        // What the recipes promise, beyond running.
        switch document {
        case "README.md":
            #expect(format(work.appending("logo.png")) == .png)
            #expect(format(work.appending("avatar.webp")) == .webp)
            // The page of "For a site": a picture per row of the table, each file it names in the site.
            let page = (try? String(contentsOfFile: work.appending("public/index.html"), encoding: .utf8)) ?? ""
            #expect(page.components(separatedBy: "<figure><picture>").count == 4, "\(page)")
            // The animation's picture offers no JPEG (a still); the photo's does.
            let moving = page.split(separator: "\n").first { $0.contains("alt=\"It moves\"") } ?? ""
            #expect(!moving.isEmpty && !moving.contains(".jpg") && page.contains("alt=\"A photo\""), "\(moving)")
            for name in page.split(separator: "\"").filter({ $0.hasPrefix("img/") }).flatMap({ $0.split(separator: " ") }) where name.hasPrefix("img/") {
                #expect(FileManager.default.fileExists(atPath: work.appending("public/" + name)), "\(name)")
            }
            #expect(FileManager.default.fileExists(atPath: work.appending("public/cache.html")))
            // Sharp at every width: no image shown wider (in device pixels) than the file the browser chose,
            // unless no wider file was made of it; at phone, tablet and desktop widths, screens of density 1 and 2.
            let check = """
                await Promise.all([...document.images].map(i => i.complete ? 0 : new Promise(r => { i.onload = i.onerror = r; })));
                return [...document.images].map(i => {
                    // Each candidate's file and width, from every srcset of the picture (a file's width is its w descriptor).
                    const candidates = [...i.closest('picture').querySelectorAll('source, img')].flatMap(e => (e.getAttribute('srcset') || '')
                        .split(',').map(c => c.trim().split(' ')).filter(c => c.length == 2)
                        .map(c => ({url: new URL(c[0], document.baseURI).href, width: parseInt(c[1])})));
                    const chosen = candidates.find(c => c.url == i.currentSrc);
                    const needed = i.getBoundingClientRect().width * devicePixelRatio;
                    const widest = Math.max(...candidates.map(c => c.width));
                    return {alt: i.alt, shown: needed, chosen: chosen ? chosen.width : i.naturalWidth, widest: widest, src: i.currentSrc};
                }).filter(r => r.chosen + 1 < Math.min(r.shown, r.widest));
                """
            try check.write(toFile: work.appending("sharp.js"), atomically: true, encoding: .utf8)
            for width in [375, 800, 1400] {
                for scale in [1, 2] {
                    let looked = try ImgCacheProcess.runShell(
                        "python3 '\(Paths.repository.path)/Tests/Fixtures/browser/look.py' 'file://\(work.appending("public/index.html"))' "
                            + "--scale \(scale) --width \(width) --height 2400 --evaluate '\(work.appending("sharp.js"))'",
                        environment: [:], home: work.path, workingDirectory: work.path)
                    let seen = (try? JSONSerialization.jsonObject(with: looked.standardOutput) as? [String: Any])?["value"] as? [Any]
                    #expect(looked.status == 0 && seen?.isEmpty == true, "\(width) px, scale \(scale): \(looked.output) \(looked.standardError)")
                }
            }
        case "Docs/SERVE.md":
            #expect(format(work.appending("photo.webp")) == .webp)
            #expect(format(work.appending("signed.webp")) == .webp)
        case "Docs/SITES.md":
            #expect(format(work.appending("sheet.html")) == nil && FileManager.default.fileExists(atPath: work.appending("report.html")))
            #expect(Set((try? FileManager.default.contentsOfDirectory(atPath: work.appending("dist"))) ?? []).isSuperset(of: ["96", "64", "img"]))
        case "Docs/USAGE.md":
            #expect(format(work.appending("a.png")) == .png)
            #expect(format(work.appending("site/static/logo.png")) == .png)
            #expect(format(work.appending("site/static/avatar.webp")) == .webp)
            let pairs = (try? String(contentsOfFile: work.appending("paths.tsv"), encoding: .utf8)) ?? ""
            let rows = pairs.split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }
            #expect(rows.count == 4 && rows.allSatisfy { $0.count == 2 && FileManager.default.fileExists(atPath: $0[1]) }, "\(pairs)")
            let log = (try? String(contentsOfFile: home.appending("imgcache-clean.jsonl"), encoding: .utf8)) ?? ""
            #expect(log.contains("\"namespace\":\"blog\""), "\(log)")
        case "Docs/DATASETS.md":
            // The data set went into the bucket and the WebDAV store whole: shards, and the manifest last.
            let objects = (try? s3?.objects()) ?? [:]
            #expect(objects.keys.sorted() == ["laion/part-1/00000.tar", "laion/part-1/00000_stats.json", "laion/part-1/manifest.jsonl"],
                    "\(objects.keys)")
            let stored = origin.storeDirectory.replacing("/store", with: "/datasets/laion/part-1")
            #expect(FileManager.default.contents(atPath: stored + "/00000.tar") != nil
                    && FileManager.default.fileExists(atPath: stored + "/manifest.jsonl"), "\(stored)")
            #expect(FileManager.default.fileExists(atPath: work.appending("merged/manifest.jsonl")))
        case "Docs/FLEET.md":
            #expect(format(work.appending("logo-from-store.png")) == .png)
            let keys = (try? redis?.keys()) ?? []
            #expect(keys.count == 4, "\(keys)")
            let objects = (try? s3?.objects()) ?? [:]
            #expect(objects.count == 4 && objects.keys.allSatisfy { $0.hasPrefix("images/v1/default/") }, "\(objects.keys)")
        default:
            break
        }
        // Everything came from the local server; nothing was asked twice that a cache should have kept.
        #expect(!origin.requests.isEmpty)
    }

    @Test func everyDocumentWithRecipesIsCovered() throws {
        let docs = try FileManager.default.contentsOfDirectory(atPath: Paths.repository.appendingPathComponent("Docs").path)
            .filter { $0.hasSuffix(".md") }.map { "Docs/" + $0 } + ["README.md"]
        for document in docs where !Self.documents.contains(document) {
            #expect(try Self.recipes(in: document).isEmpty, "\(document) has recipes that no test runs")
        }
    }
}
