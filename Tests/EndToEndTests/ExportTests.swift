import Foundation
import Testing

/// `imgcache export --webdataset`: a list's cached images as tar shards that
/// `tar` reads, the same bytes every time, images opted out of AI training
/// left out unless asked.
@Suite final class ExportTests: FaultServerSuite {
    let work: TemporaryDirectory

    override init() throws {
        work = try TemporaryDirectory("imgcache-export")
        try super.init()
    }

    func table(_ text: String, name: String = "images.csv") throws -> String {
        let path = work.appending(name)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// `tar` run on `arguments`, its standard output.
    func tar(_ arguments: [String]) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/tar")
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "tar \(arguments)")
        return data
    }

    func members(_ shard: String) throws -> [String] {
        String(decoding: try tar(["-tf", shard]), as: UTF8.self).split(separator: "\n").map(String.init)
    }

    func manifest(_ directory: String) throws -> [[String: Any]] {
        try String(contentsOfFile: directory + "/manifest.jsonl", encoding: .utf8).split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    @Test func aTableBecomesShardsThatTarReadsTheSameEveryTime() throws {
        let csv = """
            url,caption,license
            \(server.url("photo.jpg")),a photo,cc-by
            \(server.url("logo.png")),"a logo, small",cc0
            ,no url,x
            \(server.url("gray.jpg")),gray,cc0
            \(server.url("anim.gif")),never fetched,cc0
            \(server.url("alpha.webp")),alpha,cc0
            """
        let list = try table(csv)
        let cached = try table(csv.split(separator: "\n").filter { !$0.contains("anim.gif") }.joined(separator: "\n"), name: "cached.csv")
        #expect(try fetch(["prefetch", cached]).status == 1)  // the row without a URL fails
        let out = work.appending("shards")
        let result = try fetch(["export", "--webdataset", out, "--shard-size", "2", "--caption-column", "caption", list])
        #expect(result.status == 1, "a missing row: \(result.standardError)")
        #expect(result.output.contains("6 rows: 4 exported in 2 shards, 1 missing, 1 failed, 0 opted out"), "\(result.output)")
        #expect(try members(out + "/00000.tar") == ["000000000.jpg", "000000000.json", "000000000.txt",
                                                     "000000001.png", "000000001.json", "000000001.txt"])
        #expect(try members(out + "/00001.tar").first == "000000003.jpg")
        #expect(try tar(["-xOf", out + "/00000.tar", "000000000.jpg"]) == (try Paths.fixture("photo.jpg")))
        #expect(String(decoding: try tar(["-xOf", out + "/00000.tar", "000000001.txt"]), as: UTF8.self) == "a logo, small")
        let sample = try #require(try JSONSerialization.jsonObject(with: try tar(["-xOf", out + "/00000.tar", "000000000.json"])) as? [String: Any])
        #expect(sample["url"] as? String == server.url("photo.jpg") && sample["width"] as? Int == 96 && sample["format"] as? String == "jpeg")
        #expect(sample["license"] as? String == "cc-by" && (sample["sha256"] as? String)?.count == 64)
        let statuses = try manifest(out).map { $0["status"] as? String ?? "" }
        #expect(statuses == ["exported", "exported", "failed", "exported", "missing", "exported"])
        // img2dataset's fields: each sample's status and caption, each shard's _stats.json.
        #expect(sample["status"] as? String == "success" && sample["error_message"] is NSNull && sample["caption"] as? String == "a photo",
                "\(sample)")
        let stats = (0..<2).map { number in
            (FileManager.default.contents(atPath: out + "/0000\(number)_stats.json")).flatMap { try? JSONSerialization.jsonObject(with: $0) }
                as? [String: Any] ?? [:]
        }
        #expect(stats[0]["count"] as? Int == 2 && stats[0]["successes"] as? Int == 2 && stats[0]["failed_to_download"] as? Int == 0, "\(stats[0])")
        #expect(stats[1]["count"] as? Int == 4 && stats[1]["successes"] as? Int == 2 && stats[1]["failed_to_download"] as? Int == 2, "\(stats[1])")
        #expect(stats[1]["status_dict"] as? [String: Int] == ["success": 2, "bad_row": 1, "never_fetched": 1], "\(stats[1])")

        // Again into another folder: the same bytes.
        let again = work.appending("again")
        _ = try fetch(["export", "--webdataset", again, "--shard-size", "2", "--caption-column", "caption", list])
        for name in ["00000.tar", "00001.tar", "00000_stats.json", "00001_stats.json", "manifest.jsonl"] {
            #expect(FileManager.default.contents(atPath: out + "/" + name) == FileManager.default.contents(atPath: again + "/" + name), "\(name)")
        }
        // Into the same folder with bigger shards: the shards it no longer has are removed.
        #expect(try fetch(["export", "--webdataset", out, list]).status == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).sorted() == [".imgcache-export", "00000.tar", "00000_stats.json", "manifest.jsonl"])
    }

    /// A column named like a field of KEY.json is kept under `row`; of a JSONL row's duplicate keys
    /// the last counts; the URL column can be the caption; a cached image that is not the pinned
    /// bytes is said as such (nothing is stored by an export, so nothing "was not stored").
    /// A --caption-column the table's header does not name is a usage error before anything is written.
    @Test func aMisspeltCaptionColumnIsAnErrorBeforeTheExport() throws {
        let list = try table("url,caption\n\(server.url("logo.png")),a logo\n", name: "rows.csv")
        let out = work.appending("misspelt")
        let result = try fetch(["export", "--webdataset", out, "--caption-column", "captoin", list])
        #expect(result.status == 64, "\(result.standardError)")
        #expect(result.standardError.contains("has no column 'captoin' (--caption-column); its header names 'url', 'caption'; did you mean 'caption'?"),
                "\(result.standardError)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    /// Writing a folder in the other layout removes the shards of the first: a glob of the folder
    /// finds only what the manifest names.
    @Test func anExportInTheOtherLayoutLeavesNoShardOfTheFirst() throws {
        let list = try table("url\n\(server.url("logo.png"))\n\(server.url("photo.jpg"))\n", name: "two.csv")
        #expect(try fetch(["prefetch", list]).status == 0)
        let out = work.appending("switched")
        #expect(try fetch(["export", "--webdataset", out, "--shard-size", "1", list]).status == 0)
        #expect(try fetch(["export", "--files", out, list]).status == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).filter { !$0.hasPrefix(".") }.sorted()
                == ["00000", "00000_stats.json", "manifest.jsonl"])
        #expect(try fetch(["export", "--webdataset", out, list]).status == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).filter { !$0.hasPrefix(".") }.sorted()
                == ["00000.tar", "00000_stats.json", "manifest.jsonl"])
    }

    @Test func columnsNamedLikeFieldsAreKeptAndTheURLCanBeTheCaption() throws {
        let url = server.url("logo.png")
        let jsonl = "{\"url\":\"\(url)\",\"width\":\"wide\",\"format\":\"poster\",\"tag\":\"a\",\"tag\":\"b\"}\n"
        let list = try table(jsonl, name: "rows.jsonl")
        #expect(try fetch(["prefetch", list]).status == 0)
        let out = work.appending("fields")
        let result = try fetch(["export", "--webdataset", out, "--caption-column", "url", list])
        #expect(result.status == 0 && !result.standardError.contains("no row has"), "\(result.standardError)")
        let sample = try #require(try JSONSerialization.jsonObject(with: try tar(["-xOf", out + "/00000.tar", "000000000.json"]))
                                  as? [String: Any])
        #expect(sample["width"] as? Int == 64 && sample["format"] as? String == "png" && sample["tag"] as? String == "b", "\(sample)")
        #expect(sample["row"] as? [String: String] == ["width": "wide", "format": "poster"], "\(sample)")
        let raw = String(decoding: try tar(["-xOf", out + "/00000.tar", "000000000.json"]), as: UTF8.self)
        #expect(raw.components(separatedBy: "\"tag\"").count == 2, "one tag key: \(raw)")
        #expect(String(decoding: try tar(["-xOf", out + "/00000.tar", "000000000.txt"]), as: UTF8.self) == url)

        // A JSONL null caption is no caption; a number is its JSON text.
        let captions = try table("{\"url\":\"\(url)\",\"caption\":null}\n{\"url\":\"\(server.url("photo.jpg"))\",\"caption\":42}\n",
                                 name: "captions.jsonl")
        #expect(try fetch(["prefetch", captions]).status == 0)
        let captioned = work.appending("captions")
        #expect(try fetch(["export", "--webdataset", captioned, "--caption-column", "caption", captions]).status == 0)
        let names = try members(captioned + "/00000.tar")
        #expect(!names.contains("000000000.txt") && names.contains("000000001.txt"), "\(names)")
        #expect(String(decoding: try tar(["-xOf", captioned + "/00000.tar", "000000001.txt"]), as: UTF8.self) == "42")

        let wrongPin = String(repeating: "ab", count: 32)
        let pinned = try table("url,sha256\n\(url),\(wrongPin)\n", name: "pinned.csv")
        let refused = try fetch(["export", "--webdataset", work.appending("pinned"), pinned])
        #expect(refused.status == 1)
        #expect(refused.standardError.contains("sha256 mismatch: expected \(wrongPin), got ")
                && refused.standardError.contains("the cached bytes are not the pinned ones, and nothing is downloaded here")
                && !refused.standardError.contains("nothing was stored"), "\(refused.standardError)")
    }

    @Test func thumbnailsAreMadeFromTheCachedOriginals() throws {
        let list = try table("url\n\(server.url("photo.jpg"))\n\(server.url("logo.png"))\n")
        #expect(try fetch(["prefetch", list]).status == 0)
        let requests = server.requests.count
        let out = work.appending("thumbs")
        let result = try fetch(["--json", "export", "--webdataset", out, "--thumbnail", "32x32", "--format", "webp", list])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(try members(out + "/00000.tar") == ["000000000.webp", "000000000.json", "000000001.webp", "000000001.json"])
        let sample = try #require(try JSONSerialization.jsonObject(with: try tar(["-xOf", out + "/00000.tar", "000000000.json"])) as? [String: Any])
        #expect((sample["width"] as? Int ?? 99) <= 32 && sample["format"] as? String == "webp")
        #expect(server.requests.count == requests, "nothing is downloaded")
        #expect(try result.jsonLines().first?["exported"] as? Int == 2)
        #expect(try fetch(["export", "--webdataset", out, "--thumbnail", "16x,32x", list]).status == 64)
        // With --placeholders, each sample says what it looks like at a glance.
        let glance = work.appending("glance")
        #expect(try fetch(["export", "--webdataset", glance, "--thumbnail", "32x32", "--placeholders", list]).status == 0)
        let described = try #require(try JSONSerialization.jsonObject(with: try tar(["-xOf", glance + "/00000.tar", "000000000.json"])) as? [String: Any])
        #expect((described["dominant_color"] as? String)?.hasPrefix("#") == true && (described["thumbhash"] as? String)?.isEmpty == false,
                "\(described)")
        #expect(try members(glance + "/00000.tar") == ["000000000.jpg", "000000000.json", "000000001.png", "000000001.json"])
    }

    /// Every row of the manifest says what became of it and why, with its columns, so no join with
    /// prefetch's output is needed; `--report` counts them by status and reason; filters leave rows out
    /// as `filtered`, never failed.
    @Test func everyRowIsAccountedForWithItsReasonAndColumns() throws {
        let list = try table("""
            url,caption
            \(server.url("photo.jpg")),a photo
            \(server.url("logo.png")),a logo
            \(server.url("status/404")),gone
            \(server.url("rotated.jpg")),turned
            \(server.url("clear.gif")),tiny
            \(server.url("never-fetched.png")),later

            """)
        // The last row is never fetched: prefetch runs on the others.
        let fetched = try table(String(try String(contentsOfFile: list, encoding: .utf8).split(separator: "\n").dropLast().joined(separator: "\n")) + "\n",
                                name: "fetched.csv")
        #expect(try fetch(["prefetch", fetched]).status == 1)
        let out = work.appending("accounted")
        let result = try fetch(["export", "--webdataset", out, "--min-size", "20x20", "--max-aspect", "1.4", "--report", list])
        #expect(result.status == 1, "\(result.standardError)")
        let rows = try manifest(out)
        #expect(rows.map { $0["status"] as? String ?? "" } == ["filtered", "exported", "failed", "filtered", "filtered", "missing"], "\(rows)")
        #expect(rows.map { $0["reason"] as? String } == ["max_aspect", nil, "failed_url", "max_aspect", "min_size", "never_fetched"])
        #expect((rows[0]["error"] as? String)?.contains("96x64 has an aspect ratio of 1.5, over 1.4") == true)
        // As shown: rotated.jpg is stored 48x32 and shown 32x48.
        #expect((rows[3]["error"] as? String)?.contains("32x48") == true, "\(rows[3])")
        #expect((rows[2]["error"] as? String)?.contains("HTTP 404") == true)
        #expect((rows[4]["error"] as? String)?.contains("16x16 is smaller than 20x20") == true)
        #expect(rows.map { ($0["row"] as? [String: Any])?["caption"] as? String } == ["a photo", "a logo", "gone", "turned", "tiny", "later"])
        #expect(result.output.contains("filtered   3\n  max_aspect               2\n  min_size                 1")
                && result.output.contains("  never_fetched            1") && result.output.contains("exported   1"), "\(result.output)")
        // KEY.json says the size of the image as served beside the sample's (rotated.jpg is stored 48x32, shown 32x48).
        let thumbs = work.appending("thumbs")
        #expect(try fetch(["export", "--webdataset", thumbs, "--thumbnail", "16x16", list]).status == 1)
        let sample = try #require(try JSONSerialization.jsonObject(with: try tar(["-xOf", thumbs + "/00000.tar", "000000003.json"])) as? [String: Any])
        #expect(sample["original_width"] as? Int == 32 && sample["original_height"] as? Int == 48 && (sample["height"] as? Int ?? 0) <= 16, "\(sample)")
        // With --json, the report is one object.
        let json = try fetch(["--json", "export", "--webdataset", work.appending("again"), "--report", list]).jsonLines()
        let report = try #require(json.last)
        #expect(report["report"] as? Bool == true && (report["missing"] as? [String: Any])?["never_fetched"] as? Int == 1, "\(report)")
    }

    /// `--files`: img2dataset's "files" layout, a folder of files per shard, the same manifest; a later
    /// export replaces the folders and removes those it no longer has.
    @Test func filesLayoutIsAFolderOfFilesPerShard() throws {
        let list = try table("url,caption\n\(server.url("photo.jpg")),a photo\n\(server.url("logo.png")),a logo\n\(server.url("rotated.jpg")),turned\n")
        #expect(try fetch(["prefetch", list]).status == 0)
        let out = work.appending("files")
        let result = try fetch(["export", "--files", out, "--shard-size", "2", "--caption-column", "caption", list])
        #expect(result.status == 0, "\(result.standardError)")
        let listed = (FileManager.default.enumerator(atPath: out)?.allObjects as? [String] ?? []).filter { !$0.hasPrefix(".") }.sorted()
        #expect(listed == ["00000", "00000/000000000.jpg", "00000/000000000.json", "00000/000000000.txt", "00000/000000001.json",
                           "00000/000000001.png", "00000/000000001.txt", "00000_stats.json", "00001", "00001/000000002.jpg",
                           "00001/000000002.json", "00001/000000002.txt", "00001_stats.json", "manifest.jsonl"], "\(listed)")
        #expect(try manifest(out).map { $0["shard"] as? String } == ["00000", "00000", "00001"])
        #expect(FileManager.default.contents(atPath: out + "/00000/000000000.jpg") == (try Paths.fixture("photo.jpg")))
        // Again, in one shard: the old folders go.
        #expect(try fetch(["export", "--files", out, "--shard-size", "10", list]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: out + "/00001") && FileManager.default.fileExists(atPath: out + "/00000/000000002.jpg"))
        #expect(try fetch(["export", "--files", out, "--webdataset", work.appending("x"), list]).status == 64)
    }

    /// The shards as training code reads them: the `webdataset` package (PyPI) iterates every sample,
    /// PIL decodes each image at the size KEY.json says, and the captions and columns are the table's.
    @Test func theWebdatasetPackageReadsEverySampleBack() throws {
        let list = try table("""
            url,caption,license
            \(server.url("photo.jpg")),"a photo, with a comma",cc-by
            \(server.url("logo.png")),a logo,cc0
            \(server.url("rotated.jpg")),turned,cc-by-sa

            """)
        #expect(try fetch(["prefetch", list]).status == 0)
        let out = work.appending("wds")
        #expect(try fetch(["export", "--webdataset", out, "--shard-size", "2", "--thumbnail", "32x32", "--format", "webp",
                           "--caption-column", "caption", list]).status == 0)
        let script = """
            import json, sys, io, glob
            import webdataset as wds
            from PIL import Image
            out = []
            for sample in wds.WebDataset(sorted(glob.glob(sys.argv[1] + "/*.tar")), shardshuffle=False):
                meta = json.loads(sample["json"])
                image = Image.open(io.BytesIO(sample["webp"]))
                image.load()
                out.append({"key": sample["__key__"], "size": list(image.size), "declared": [meta["width"], meta["height"]],
                            "caption": sample["txt"].decode(), "license": meta["license"], "url": meta["url"]})
            print(json.dumps(out))
            """
        // The python3 the harness installed webdataset for.
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let result = try ImgCacheProcess.runShell("python3 -c '\(script.replacing("'", with: "'\\''"))' '\(out)'", environment: ["PATH": path],
                                                  home: work.path, workingDirectory: work.path)
        #expect(result.status == 0, "\(result.standardError)")
        let samples = try #require(try JSONSerialization.jsonObject(with: result.standardOutput) as? [[String: Any]], "\(result.output)")
        #expect(samples.map { $0["key"] as? String } == ["000000000", "000000001", "000000002"])
        for sample in samples { #expect(sample["size"] as? [Int] == sample["declared"] as? [Int], "\(sample)") }
        #expect(samples.map { $0["caption"] as? String } == ["a photo, with a comma", "a logo", "turned"])
        #expect(samples.map { $0["license"] as? String } == ["cc-by", "cc0", "cc-by-sa"])
        #expect(samples.map { $0["url"] as? String } == [server.url("photo.jpg"), server.url("logo.png"), server.url("rotated.jpg")])
    }

    /// Prefetched with `--no-original` and one variant, exported asking another: no original is kept to
    /// make it from, said as such (not as never fetched), and an image opted out stays opted out.
    @Test func anotherVariantOfAnImageKeptOnlyAsItsVariantsIsSaidSo() throws {
        let urls = [faults.baseURL + "/robots/noai/photo.jpg", server.url("logo.png"), server.url("gray.jpg")]
        let list = try work.write(lines: urls)
        #expect(try fetch(["prefetch", "--no-original", "--thumbnail", "16x16", "--format", "webp", list]).status == 0)
        let never = server.url("palette.png")
        let out = work.appending("other-variant")
        let result = try fetch(["export", "--webdataset", out, "--thumbnail", "32x32", list, try work.write(lines: [never], to: "more.txt")])
        let rows = try manifest(out).map { "\($0["status"] as? String ?? "") \($0["reason"] as? String ?? "")" }
        #expect(rows == ["opted_out noai", "missing original_not_kept", "missing original_not_kept", "missing never_fetched"],
                "\(rows) \(result.standardError)")
        // The variants prefetched are exported as ever.
        #expect(try fetch(["export", "--webdataset", work.appending("same-variant"), "--thumbnail", "16x16", "--format", "webp", list]).status == 0)
    }

    @Test func imagesOptedOutOfAITrainingAreLeftOutUnlessAsked() throws {
        let urls = [faults.baseURL + "/robots/noai/photo.jpg", faults.baseURL + "/robots/googlebot%3A%20noimageai/logo.png",
                    faults.baseURL + "/robots/noindex/gray.jpg"]
        let list = try work.write(lines: urls)
        #expect(try fetch(["prefetch", list]).status == 0)
        let out = work.appending("polite")
        let result = try fetch(["export", "--webdataset", out, list])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.output.contains("1 exported in 1 shard, 0 missing, 0 failed, 2 opted out"), "\(result.output)")
        #expect(try members(out + "/00000.tar") == ["000000002.jpg", "000000002.json"])
        #expect(try manifest(out).map { $0["status"] as? String ?? "" } == ["opted_out", "opted_out", "exported"])
        let all = work.appending("all")
        #expect(try fetch(["export", "--webdataset", all, "--include-opted-out", list]).status == 0)
        #expect(try members(all + "/00000.tar").count == 6)

        // Shared through a remote store, the opt-out goes with the image to the other machine.
        let machineA = work.appending("a"), machineB = work.appending("b")
        #expect(try ImgCacheProcess.run(["--cache-dir", machineA, "prefetch", "--remote", server.url("store"), list], home: home.path).status == 0)
        let fromStore = try ImgCacheProcess.run(["--cache-dir", machineB, "--json", "prefetch", "--remote", server.url("store"), list],
                                                home: home.path)
        #expect(try fromStore.jsonLines().last?["remote"] as? Int == 3, "\(fromStore.output)")
        let elsewhere = work.appending("elsewhere")
        #expect(try ImgCacheProcess.run(["--cache-dir", machineB, "export", "--webdataset", elsewhere, list], home: home.path).status == 0)
        #expect(try manifest(elsewhere).map { $0["status"] as? String ?? "" } == ["opted_out", "opted_out", "exported"])
    }

    @Test func aFolderHoldingOtherFilesIsRefused() throws {
        let list = try work.write(lines: [server.url("photo.jpg")])
        let out = work.appending("mine")
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: out + "/thesis.pdf", contents: Data("keep".utf8))
        let result = try fetch(["export", "--webdataset", out, list])
        #expect(result.status == 74 && result.standardError.contains("holds thesis.pdf, and no export made the folder"), "\(result.standardError)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: out) == ["thesis.pdf"])
        #expect(try fetch(["export", list]).status == 64)
        // Files that merely look like an export's are the user's too: neither replaced nor removed.
        let lookalike = work.appending("lookalike")
        try FileManager.default.createDirectory(atPath: lookalike, withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: lookalike + "/00003.tar", contents: Data("mine".utf8))
        #expect(try fetch(["export", "--webdataset", lookalike, list]).status == 74)
        #expect(FileManager.default.contents(atPath: lookalike + "/00003.tar") == Data("mine".utf8))
        // A link to a folder is written through.
        let real = work.appending("real-shards")
        try FileManager.default.createDirectory(atPath: real, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: work.appending("link-shards"), withDestinationPath: real)
        #expect(try fetch(["prefetch", list]).status == 0)
        let linked = try fetch(["export", "--webdataset", work.appending("link-shards"), list])
        #expect(linked.status == 0, "\(linked.standardError)")
        #expect(FileManager.default.fileExists(atPath: real + "/00000.tar"))
        // Options that would download, or refresh, are refused: export only reads.
        for option in [["--refresh"], ["--no-cache-read"], ["--retry-failed"], ["--remote", "http://127.0.0.1:1/store"], ["--remote-reshare"],
                       ["--remote", "http://127.0.0.1:1/store", "--remember"]] {
            let refused = try fetch(["export", "--webdataset", work.appending("x")] + option + [list])
            #expect(refused.status == 64 && refused.standardError.contains("cannot be used with export"), "\(option): \(refused.standardError)")
        }
        // Nothing was remembered, and export's help lists none of them.
        let settings = (try? String(contentsOfFile: cacheRoot + "/default/settings", encoding: .utf8)) ?? ""
        #expect(!settings.contains("remote"), "\(settings)")
        let help = try fetch(["export", "--help"]).output
        for option in ["--refresh", "--no-cache-read", "--retry-failed", "--remote ", "--remote-reshare", "--remember"] {
            #expect(!help.contains(option), "export --help lists \(option)")
        }
        // A store named in the environment or remembered is not asked: the run neither waits for it nor says it.
        let unasked = try fetch(["-v", "export", "--webdataset", work.appending("y"), list], environment: ["IMGCACHE_REMOTE": "http://127.0.0.1:1/store"])
        #expect(unasked.status == 0 && !unasked.standardError.contains("remote"), "\(unasked.standardError)")
    }

    @Test func anExportThatFailsOrIsStoppedLeavesTheEarlierOneAsItWas() throws {
        let list = try table("url,caption\n\(server.url("photo.jpg")),a photo\n\(server.url("logo.png")),a logo\n")
        #expect(try fetch(["prefetch", list]).status == 0)
        let out = work.appending("kept")
        #expect(try fetch(["export", "--webdataset", out, "--shard-size", "1", list]).status == 0)
        let before = try FileManager.default.contentsOfDirectory(atPath: out).sorted()
        let bytes = before.map { FileManager.default.contents(atPath: out + "/" + $0) }
        #expect(before == [".imgcache-export", "00000.tar", "00000_stats.json", "00001.tar", "00001_stats.json", "manifest.jsonl"])
        // A list that cannot be read (no such column): exit 66, the earlier export untouched.
        let failed = try fetch(["export", "--webdataset", out, "--url-column", "image_url", list])
        #expect(failed.status == 66 && failed.standardError.contains("nothing of this export was kept"), "\(failed.standardError)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).sorted() == before)
        #expect(before.map { FileManager.default.contents(atPath: out + "/" + $0) } == bytes)
        // A caption column the header does not name: a usage error, the earlier export untouched.
        let misspelt = try fetch(["export", "--webdataset", out, "--caption-column", "captoin", list])
        #expect(misspelt.status == 64 && misspelt.standardError.contains("has no column 'captoin'"), "\(misspelt.standardError)")
        #expect(before.map { FileManager.default.contents(atPath: out + "/" + $0) } == bytes)
    }


    /// Two machines' caches (prefetch --shard), exported from one with the other read-only: the filters judge
    /// each image by its original's size, the same on every run as from one cache, even where only a variant
    /// is in the writable cache.
    @Test func filtersJudgeOriginalsInAReadOnlyCacheTheSameOnEveryRun() throws {
        let names = ["photo.jpg", "logo.png", "gray.jpg", "alpha.webp", "palette.png", "progressive.jpg", "rotated.jpg", "lossless.webp",
                     "sticker.webp", "cmyk.jpg", "broken.png"]
        let list = try table(names.map { server.url($0) }.joined(separator: "\n") + "\n", name: "list.txt")
        func on(_ cache: String, _ arguments: [String]) throws -> RunResult {
            try ImgCacheProcess.run(["--cache-dir", work.appending(cache)] + arguments, home: home.path)
        }
        let filters = ["--thumbnail", "16x16", "--format", "webp", "--min-size", "32x25", "--max-aspect", "1.45"]
        #expect(try on("single", ["prefetch", list]).status == 1)
        #expect(try on("single", ["export", "--webdataset", work.appending("one")] + filters + [list]).status == 1)
        let expected = try manifest(work.appending("one")).map { "\($0["status"] ?? "")/\($0["reason"] ?? "")" }
        #expect(expected.filter { $0.hasPrefix("filtered") }.count == 8 && expected.last == "failed/failed_url", "\(expected)")
        // The broken image fails on one of the machines: its failed-URL list says why, read-only or not.
        _ = try on("a", ["prefetch", "--shard", "0/2", list])
        _ = try on("b", ["prefetch", "--shard", "1/2", list])
        for round in 0..<3 {
            let out = work.appending("split\(round)")
            let result = try on("a", ["export", "--webdataset", out, "--read-only-path", work.appending("b/default")] + filters + [list])
            #expect(result.status == 1, "\(result.standardError)")
            let got = try manifest(out).map { "\($0["status"] ?? "")/\($0["reason"] ?? "")" }
            #expect(got == expected, "round \(round): \(got)")
            #expect(FileManager.default.contents(atPath: out + "/00000.tar") == FileManager.default.contents(atPath: work.appending("one/00000.tar")))
        }
    }

    /// A second export into a folder while one is writing it is refused (exit 74, saying so), and
    /// leaves the folder as it was: two exports never mix their shards.
    @Test func aSecondExportIntoAFolderBeingWrittenIsRefused() throws {
        let list = try table(["photo.jpg", "logo.png"].map { server.url($0) }.joined(separator: "\n") + "\n", name: "list.txt")
        #expect(try fetch(["prefetch", list]).status == 0)
        let out = work.appending("busy")
        #expect(try fetch(["export", "--webdataset", out, list]).status == 0)
        let before = try FileManager.default.contentsOfDirectory(atPath: out).sorted()
        // The folder locked as a running export locks it.
        let folder = open(out, O_RDONLY | O_DIRECTORY)
        #expect(folder >= 0 && flock(folder, LOCK_EX | LOCK_NB) == 0)
        let refused = try fetch(["export", "--webdataset", out, "--shard-size", "1", list])
        #expect(refused.status == 74, "\(refused.standardError)")
        #expect(refused.standardError.contains("another export is writing \(out) now"), "\(refused.standardError)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).sorted() == before)
        close(folder)
        #expect(try fetch(["export", "--webdataset", out, "--shard-size", "1", list]).status == 0)
    }

    /// The partial shards an export killed part way left (tars and folders, any number) are gone after
    /// the next export into the folder, however few shards it writes.
    @Test func theNextExportRemovesWhatAKilledOneLeftPartWritten() throws {
        let list = try table(["photo.jpg", "logo.png"].map { server.url($0) }.joined(separator: "\n") + "\n", name: "list.txt")
        #expect(try fetch(["prefetch", list]).status == 0)
        let out = work.appending("left")
        #expect(try fetch(["export", "--webdataset", out, list]).status == 0)
        FileManager.default.createFile(atPath: out + "/.00007.tar.partial", contents: Data(repeating: 1, count: 512))
        try FileManager.default.createDirectory(atPath: out + "/.00003.partial", withIntermediateDirectories: false)
        FileManager.default.createFile(atPath: out + "/.00003.partial/k.jpg", contents: Data("x".utf8))
        #expect(try fetch(["export", "--webdataset", out, list]).status == 0)
        let names = try FileManager.default.contentsOfDirectory(atPath: out).sorted()
        #expect(!names.contains { $0.hasSuffix(".partial") }, "\(names)")
        #expect(names.contains("00000.tar") && names.contains("manifest.jsonl"), "\(names)")
    }

    /// Machines that kept only their variants (`--no-original`): one export, from one cache with the
    /// others read-only, finds them all, and `fetch --cache-only` does too.
    @Test func variantsMadeWithoutTheOriginalAreFoundInAReadOnlyCache() throws {
        let names = ["photo.jpg", "logo.png", "gray.jpg", "alpha.webp", "palette.png", "sticker.webp"]
        let list = try table(names.map { server.url($0) }.joined(separator: "\n") + "\n", name: "list.txt")
        func on(_ cache: String, _ arguments: [String]) throws -> RunResult {
            try ImgCacheProcess.run(["--cache-dir", work.appending(cache)] + arguments, home: home.path)
        }
        let variant = ["--thumbnail", "16x16", "--fit", "cover", "--format", "webp"]
        #expect(try on("single", ["prefetch"] + variant + [list]).status == 0)
        #expect(try on("single", ["export", "--webdataset", work.appending("one")] + variant + [list]).status == 0)
        for part in 0..<2 {
            #expect(try on("m\(part)", ["prefetch", "--shard", "\(part)/2", "--no-original"] + variant + [list]).status == 0)
        }
        let out = work.appending("merged")
        let merged = try on("m0", ["export", "--webdataset", out, "--read-only-path", work.appending("m1/default")] + variant + [list])
        #expect(merged.status == 0, "\(merged.standardError)")
        let statuses = try manifest(out).map { $0["status"] as? String ?? "" }
        #expect(statuses == Array(repeating: "exported", count: names.count), "\(statuses)")
        #expect(FileManager.default.contents(atPath: out + "/00000.tar") == FileManager.default.contents(atPath: work.appending("one/00000.tar")))
        // A cache's root, or no folder at all, finds nothing, and the run says so.
        let root = try on("m0", ["fetch", "--cache-only", "--read-only-path", work.appending("m1")] + variant + [server.url(names[0])])
        #expect(root.standardError.contains("is a cache's root, not a namespace's folder: give \(work.appending("m1"))/default"), "\(root.standardError)")
        let none = try on("m0", ["fetch", "--cache-only", "--read-only-path", work.appending("nowhere")] + variant + [server.url(names[0])])
        #expect(none.standardError.contains("is no folder: nothing is read from it"), "\(none.standardError)")
        for name in names {
            let found = try on("m0", ["fetch", "--cache-only", "--read-only-path", work.appending("m1/default")] + variant + [server.url(name)])
            #expect(found.status == 0 && found.output.hasSuffix(".webp\n"), "\(name): \(found.standardError)")
        }
    }

    /// An export killed (SIGKILL) before it finished into a new folder: the next export takes the folder
    /// as its own, tidies what was left and writes the data set.
    @Test func anExportKilledInANewFolderLeavesOneTheNextExportTakes() throws {
        let urls = ["photo.jpg", "logo.png", "gray.jpg", "sticker.webp"].map { server.url($0) }
        let list = try table(urls.joined(separator: "\n") + "\n", name: "list.txt")
        #expect(try fetch(["prefetch", list]).status == 0)
        let out = work.appending("new")
        // The list comes through a pipe held open: the export waits for more rows with a shard written.
        let input = Pipe()
        let outputs = try TemporaryDirectory("imgcache-killed-export")
        let process = try ImgCacheProcess.startCapturing(["--cache-dir", cacheRoot, "export", "--webdataset", out, "--shard-size", "1", "-"],
                                                         home: home.path, outputs: outputs, input: input)
        input.fileHandleForWriting.write(Data((urls[0] + "\n" + urls[1] + "\n").utf8))
        let deadline = Date().addingTimeInterval(30)
        for _ in 0..<30_000 where Date() < deadline {
            if FileManager.default.fileExists(atPath: out + "/.00000.tar.partial") { break }
            usleep(1000)
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let left = try FileManager.default.contentsOfDirectory(atPath: out)
        #expect(left.contains(".00000.tar.partial") && !left.contains("00000.tar") && !left.contains("manifest.jsonl"), "\(left)")
        let again = try fetch(["export", "--webdataset", out, "--shard-size", "1", list])
        #expect(again.status == 0, "\(again.standardError)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).sorted()
                == [".imgcache-export", "00000.tar", "00000_stats.json", "00001.tar", "00001_stats.json", "00002.tar", "00002_stats.json",
                    "00003.tar", "00003_stats.json", "manifest.jsonl"])
        // A failed export into a new folder leaves it as it found it: empty.
        let failed = work.appending("failed")
        let broken = try fetch(["export", "--webdataset", failed, "--files", failed, list])
        #expect(broken.status == 64)
        let unreadable = try fetch(["export", "--webdataset", failed, work.appending("no-such-list")])
        #expect(unreadable.status == 66 && !FileManager.default.fileExists(atPath: failed))
        // A table refused once read (a Parquet file): the folder made for it goes again.
        let parquet = try table("PAR1\u{00}\u{01}rows\n", name: "rows.parquet")
        let refused = try fetch(["export", "--webdataset", failed, parquet])
        #expect(refused.status == 66 && !FileManager.default.fileExists(atPath: failed), "\(refused.standardError)")
    }

    /// Rows are streamed: a table ten times longer exports in the same memory (the whole manifest, every row
    /// accounted for), well under 60 MB. The peak is the child's own, from `getrusage` in a Python parent.
    @Test func memoryStaysFlatHoweverLongTheTable() throws {
        let cached = ["photo.jpg", "logo.png", "gray.jpg"].map { server.url($0) }
        #expect(try fetch(["prefetch", try table(cached.joined(separator: "\n") + "\n", name: "cached.txt")]).status == 0)
        func peak(rows: Int) throws -> Int {
            var text = "url,caption\n"
            text.reserveCapacity(rows * 60)
            for row in 0..<rows {
                text += (row < cached.count ? cached[row] : "http://127.0.0.1:9/never/\(row).jpg") + ",\"caption, \(row)\"\n"
            }
            let list = try table(text, name: "rows-\(rows).csv")
            let out = work.appending("flat-\(rows)")
            let measured = try ImgCacheProcess.runShell("""
                python3 -c 'import resource, subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); \
                print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' \
                imgcache --cache-dir '\(cacheRoot)' -q export --webdataset '\(out)' '\(list)'
                """, environment: ["PATH": URL(fileURLWithPath: Paths.binary).deletingLastPathComponent().path + ":/usr/bin:/bin"],
                home: home.path, workingDirectory: work.path)
            let lines = try String(contentsOfFile: out + "/manifest.jsonl", encoding: .utf8).split(separator: "\n")
            #expect(lines.count == rows && lines.filter { $0.contains("\"exported\"") }.count == cached.count)
            return (Int(measured.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? .max) * 1024
        }
        let small = try peak(rows: 10_000), large = try peak(rows: 100_000)
        // The allowance is the noise of a loaded machine (malloc's arenas); a byte kept per row for 90,000
        // more rows (a manifest held, say, at some 200 bytes each) is well over it.
        #expect(large < 60 << 20 && large - small < 12 << 20, "10,000 rows: \(small >> 20) MB, 100,000 rows: \(large >> 20) MB")
    }

    /// img2dataset's max_image_area: an image over `--max-pixels`, whether export's own limit refuses its
    /// variant or prefetch's refused its download, is `filtered` with `max_pixels`, said only in the manifest.
    @Test func anImageOverThePixelLimitIsFilteredNotFailed() throws {
        let list = try table([server.url("logo.png"), server.url("gray.jpg")].joined(separator: "\n") + "\n", name: "two.txt")
        #expect(try fetch(["prefetch", list]).status == 0)
        let atExport = try fetch(["export", "--webdataset", work.appending("a"), "--thumbnail", "16x16", "--max-pixels", "2000", "--report", list])
        #expect(atExport.status == 0 && atExport.standardError.isEmpty, "\(atExport.standardError)")
        #expect(try manifest(work.appending("a")).map { "\($0["status"] ?? "")/\($0["reason"] ?? "")" } == ["filtered/max_pixels", "exported/"])
        let other = work.appending("other-cache")
        #expect(try ImgCacheProcess.run(["--cache-dir", other, "prefetch", "--max-pixels", "2000", list], home: home.path).status == 1)
        let atDownload = try ImgCacheProcess.run(["--cache-dir", other, "export", "--webdataset", work.appending("b"), list], home: home.path)
        #expect(atDownload.status == 0, "\(atDownload.standardError)")
        #expect(try manifest(work.appending("b")).map { "\($0["status"] ?? "")/\($0["reason"] ?? "")" } == ["filtered/max_pixels", "exported/"])
    }
}
