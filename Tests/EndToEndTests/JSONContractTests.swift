import Foundation
import ImgCacheCore
import Testing

/// Every `--json` output, held to Docs/JSON.md: the documented fields, no
/// others, of the documented types.
@Suite final class JSONContractTests: LoopbackCacheSuite {
    @Test func theDocumentHasEveryShape() {
        for section in ["fetch and prefetch: an image", "fetch and prefetch: a failure", "prefetch: the summary", "cache-info",
                        "clean", "clean --dry-run: a file", "clean: skipped", "clear", "clear --failed",
                        "list", "list --failed", "remove", "config", "remote check", "export", "export: the report"] {
            #expect(JSONContract.sections[section]?.isEmpty == false, "\(section)")
        }
    }

    @Test func fetchAndPrefetchLines() throws {
        let fetched = try fetch(["--json", "fetch", server.url("photo.jpg"), server.url("status/404"), server.url("status/404"),
                                 server.url("photo.jpg")])
        let lines = try fetched.jsonLines()
        #expect(lines.count == 4)
        JSONContract.expect(lines[0], matches: "fetch and prefetch: an image")
        JSONContract.expect(lines[1], matches: "fetch and prefetch: a failure")
        JSONContract.expect(lines[2], matches: "fetch and prefetch: a failure")
        JSONContract.expect(lines[3], matches: "fetch and prefetch: an image")
        // A remembered failure, and an image kept only in memory, keep the same shapes.
        let again = try fetch(["--json", "fetch", server.url("status/404")])
        JSONContract.expect(try again.jsonLines().first, matches: "fetch and prefetch: a failure")
        #expect(try again.jsonLines().first?["blacklisted"] as? Bool == true)
        let memory = try fetch(["--json", "fetch", "--memory-only", "-o", home.appending("copy.png"), server.url("logo.png")])
        JSONContract.expect(try memory.jsonLines().first, matches: "fetch and prefetch: an image")

        // Several variants: each element of `variants` has the documented shape.
        let variants = try fetch(["--json", "fetch", "--thumbnail", "16x,32x", "--format", "webp,png", server.url("photo.jpg")])
        let object = try #require(try variants.jsonLines().first)
        JSONContract.expect(object, matches: "fetch and prefetch: an image")
        let items = try #require(object["variants"] as? [[String: Any]])
        #expect(items.count == 4)
        for item in items { JSONContract.expect(item, matches: "fetch and prefetch: an image (a variant)") }
        // Pages: placeholders, copies and their addresses keep the documented shapes too.
        let site = home.appending("site")
        for extra in [["--thumbnail", "16x,32x", "--format", "webp,png"], []] {
            let paged = try fetch(["--json", "fetch", "--placeholders", "--output-dir", site + "/img", "--site-root", site]
                                  + extra + [server.url("photo.jpg")])
            let line = try #require(try paged.jsonLines().first)
            JSONContract.expect(line, matches: "fetch and prefetch: an image")
            #expect((line["dominant_color"] as? String)?.count == 7 && (line["lqip"] as? String)?.hasPrefix("data:image/webp;base64,") == true)
            // The preview: a WebP at most 32 pixels a side, under a kilobyte for a photo.
            let preview = try #require(Base64.decoded(String((line["lqip"] as? String ?? "").dropFirst("data:image/webp;base64,".count))))
            let header = try ImageHeader.probe(preview)
            #expect(preview.count < 1024 && header.format == .webp && max(header.width, header.height) <= 32, "\(preview.count) bytes")
            for item in line["variants"] as? [[String: Any]] ?? [] {
                JSONContract.expect(item, matches: "fetch and prefetch: an image (a variant)")
                #expect((item["url"] as? String)?.hasPrefix("img/photo-") == true, "\(item)")
            }
            if extra.isEmpty { #expect((line["page_url"] as? String)?.hasPrefix("img/photo-96.") == true, "\(line)") }
        }

        let list = home.appending("urls.txt")
        try [server.url("photo.jpg"), server.url("anim.gif"), server.url("status/410")].joined(separator: "\n")
            .write(toFile: list, atomically: false, encoding: .utf8)
        let prefetched = try fetch(["--json", "prefetch", list]).jsonLines()
        #expect(prefetched.count == 4)
        for line in prefetched.dropLast() {
            JSONContract.expect(line, matches: line["error"] == nil ? "fetch and prefetch: an image" : "fetch and prefetch: a failure")
        }
        JSONContract.expect(prefetched.last, matches: "prefetch: the summary")

        // A table: rows carried, a row without a URL named by its line.
        let table = home.appending("rows.csv")
        try "url,caption\n\(server.url("logo.png")),a logo\n,nothing\n\(server.url("status/410")),gone\n"
            .write(toFile: table, atomically: false, encoding: .utf8)
        let rows = try fetch(["--json", "prefetch", table]).jsonLines()
        #expect(rows.count == 4)
        for line in rows.dropLast() {
            JSONContract.expect(line, matches: line["error"] == nil ? "fetch and prefetch: an image" : "fetch and prefetch: a failure")
            #expect(line["row"] != nil)
        }
        #expect(rows.contains { $0["line"] as? Int == 3 && $0["url"] is NSNull })

        let exported = try fetch(["--json", "export", "--webdataset", home.appending("shards"), table]).jsonLines()
        #expect(exported.count == 1)
        JSONContract.expect(exported.first, matches: "export")
        let reported = try fetch(["--json", "export", "--webdataset", home.appending("shards"), "--report", table]).jsonLines()
        #expect(reported.count == 2)
        JSONContract.expect(reported.last, matches: "export: the report")
    }

    @Test func maintenanceObjects() throws {
        let empty = try fetch(["--json", "cache-info"]).jsonLines().first
        JSONContract.expect(empty, matches: "cache-info")
        _ = try fetch(["fetch", server.url("photo.jpg"), server.url("status/404")])
        JSONContract.expect(try fetch(["--json", "cache-info"]).jsonLines().first, matches: "cache-info")
        JSONContract.expect(try fetch(["--json", "clean", "--max-size", "none", "--max-age", "never"]).jsonLines().first, matches: "clean")
        let dry = try fetch(["--json", "clean", "--dry-run", "--max-size", "1k"]).jsonLines()
        #expect(dry.count >= 2)
        for line in dry.dropLast() { JSONContract.expect(line, matches: "clean --dry-run: a file") }
        JSONContract.expect(dry.last, matches: "clean")
        JSONContract.expect(try fetch(["--json", "clear", "--failed"]).jsonLines().first, matches: "clear --failed")
        JSONContract.expect(try fetch(["--json", "clear"]).jsonLines().first, matches: "clear")
    }
}
