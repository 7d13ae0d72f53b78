import Foundation
import Testing

/// Lists as tables (CSV, TSV, JSONL, gzipped or not), as data sets come: each
/// row's URL fetched, its other columns carried into its JSON line, a bad row
/// named by its line while the rest goes on; bytes pinned by their SHA-256.
@Suite final class TableListTests: FaultServerSuite {
    let work: TemporaryDirectory

    override init() throws {
        work = try TemporaryDirectory("imgcache-tables")
        try super.init()
    }

    /// Writes `text` as the file `name` in the work folder.
    func table(_ text: String, name: String) throws -> String {
        let path = work.appending(name)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// The answers (not the summary) of a --json run.
    func answers(_ result: RunResult) throws -> [[String: Any]] {
        try result.jsonLines().filter { $0["summary"] == nil }
    }

    func summary(_ result: RunResult) throws -> [String: Any] {
        try #require(try result.jsonLines().last { $0["summary"] as? Bool == true })
    }

    @Test func csvRowsCarryTheirColumnsAndBadRowsNameTheirLines() throws {
        let csv = """
            id,url,caption
            1,\(server.url("photo.jpg")),"A photo, with \"\"quotes\"\""
            2,\(server.url("logo.png")),"two
            lines"
            3,,no URL here
            4,\(server.url("gray.jpg")),a "stray" quote
            5,"\(server.url("anim.gif"))"x,text after the closing quote
            6,\(server.url("alpha.webp")),too,many
            7,\(server.url("palette.png")),last one
            """
        let result = try fetch(["--json", "prefetch", try table(csv, name: "images.csv")])
        #expect(result.status == 1, "\(result.standardError)")
        let lines = try answers(result)
        let fetched = lines.filter { $0["path"] != nil }
        #expect(fetched.count == 3)
        let photo = try #require(fetched.first { ($0["url"] as? String)?.hasSuffix("photo.jpg") == true })
        #expect(photo["row"] as? [String: String] == ["id": "1", "caption": "A photo, with \"quotes\""])
        let logo = try #require(fetched.first { ($0["url"] as? String)?.hasSuffix("logo.png") == true })
        #expect(logo["row"] as? [String: String] == ["id": "2", "caption": "two\nlines"])
        let bad = lines.filter { $0["error"] != nil }.sorted { ($0["line"] as? Int ?? 0) < ($1["line"] as? Int ?? 0) }
        #expect(bad.map { $0["line"] as? Int } == [5, 6, 7, 8])
        #expect(bad.allSatisfy { $0["url"] is NSNull })
        #expect((bad[0]["error"] as? String) == "line 5 of the list: no URL in column \"url\"")
        #expect(bad[0]["row"] as? [String: String] == ["id": "3", "caption": "no URL here"])
        #expect((bad[1]["error"] as? String)?.contains("a quote inside a field") == true)
        #expect((bad[2]["error"] as? String)?.contains("text after a closing quote") == true)
        #expect((bad[3]["error"] as? String)?.contains("4 fields, but the header names 3") == true)
        #expect(result.standardError.contains("imgcache: error: line 5 of the list: no URL in column \"url\""))
        let counts = try summary(result)
        #expect(counts["urls"] as? Int == 7 && counts["downloaded"] as? Int == 3 && counts["failed"] as? Int == 4)
    }

    /// Several tables in one run, each with its own header (its columns in its own order): every
    /// row fetched with its columns, a bad row of a later file naming it; export's keys go on across them.
    @Test func severalTablesAreReadInTurnEachWithItsHeader() throws {
        let first = try table("url,caption\n\(server.url("photo.jpg")),a photo\n\(server.url("logo.png")),a logo\n", name: "a.csv")
        let second = try table("caption,license,url\ngray one,cc0,\(server.url("gray.jpg"))\nnone,cc0,\n", name: "b.csv")
        let result = try fetch(["--json", "prefetch", first, second])
        #expect(result.status == 1, "\(result.standardError)")
        let rows = try answers(result)
        #expect(rows.count == 4, "\(rows)")
        let gray = try #require(rows.first { ($0["url"] as? String)?.hasSuffix("gray.jpg") == true })
        #expect(gray["row"] as? [String: String] == ["caption": "gray one", "license": "cc0"], "\(gray)")
        #expect(rows.contains { ($0["error"] as? String) == "line 3 of the list: in \(second): no URL in column \"url\"" }, "\(rows)")
        #expect(try summary(result)["downloaded"] as? Int == 3)
        // The keys go on from one table to the next.
        let out = work.appending("set")
        let exported = try fetch(["export", "--webdataset", out, "--caption-column", "caption", first, second])
        #expect(exported.status == 1 && exported.output.contains("4 rows: 3 exported"), "\(exported.output) \(exported.standardError)")
        let keys = try String(contentsOfFile: out + "/manifest.jsonl", encoding: .utf8).split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["key"] as? String
        }
        #expect(keys == ["000000000", "000000001", "000000002", "000000003"], "\(keys)")
        // A later table without the URL column stops the run before any request, as the first would.
        let before = server.requests.count
        let headless = try table("link,text\n\(server.url("anim.gif")),x\n", name: "c.csv")
        let refused = try fetch(["prefetch", try table("url\n\(server.url("alpha.webp"))\n", name: "d.csv"), headless])
        #expect(refused.status == 66 && refused.standardError.contains("c.csv: no column \"url\" in the header"), "\(refused.standardError)")
        #expect(server.requests.count == before)
    }

    /// At its deadline a run still reads the rest of its table: every row is answered (a cached one
    /// as a hit, the others as not done), a repeated URL's row too, and --stats says it stopped early.
    @Test func aDeadlineAnswersEveryRowOfATable() throws {
        #expect(try fetch(["fetch", server.url("photo.jpg")]).status == 0)
        var rows = ["url,n"] + (0..<3000).map { "\(faults.baseURL)/stall?n=\($0),\($0)" }
        rows += ["\(server.url("photo.jpg")),cached", "\(faults.baseURL)/stall?n=7,again"]
        let stats = work.appending("stats.json")
        let result = try fetch(["--json", "prefetch", "--deadline", "1", "--stats", stats, try table(rows.joined(separator: "\n") + "\n", name: "rows.csv")])
        #expect(result.status == 1, "\(result.standardError)")
        let lines = try answers(result)
        #expect(lines.count == 3002, "\(lines.count) lines for 3002 rows")
        #expect(lines.filter { ($0["error"] as? String)?.contains("(--deadline)") == true }.count == 3000)
        let cached = try #require(lines.first { ($0["row"] as? [String: String])?["n"] == "cached" })
        #expect(cached["cache"] as? String == "disk")
        let again = try #require(lines.first { ($0["row"] as? [String: String])?["n"] == "again" })
        #expect(again["repeat"] as? Bool == true && (again["url"] as? String)?.hasSuffix("/stall?n=7") == true)
        JSONContract.expect(again, matches: "prefetch: a table's row that repeats a URL")
        let numbers = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: stats))) as? [String: Any]
        #expect(numbers?["stopped_early"] as? Bool == true)
        #expect(try summary(result)["complete"] as? Bool == false)
        // An export says so: the downloads the deadline stopped under way name it, the rows it never
        // reached say a prefetch may have stopped before them.
        let out = work.appending("after-deadline")
        _ = try fetch(["export", "--webdataset", out, try table(rows.joined(separator: "\n") + "\n", name: "rows.csv")])
        let manifest = try String(contentsOfFile: out + "/manifest.jsonl", encoding: .utf8).split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let stopped = manifest.filter { ($0["error"] as? String)?.contains("(--deadline)") == true }
        #expect(!stopped.isEmpty && stopped.allSatisfy { $0["reason"] as? String == "failed_retryable" }, "\(stopped.prefix(2))")
        let unreached = manifest.filter { $0["reason"] as? String == "never_fetched" }
        #expect(unreached.allSatisfy { ($0["error"] as? String)?.contains("stopped early (--deadline, a signal)") == true })
    }

    /// A bad row (no URL to key) is one part's to report, by its line: of N parts splitting a
    /// table, exactly one fails for it and counts it; the others count it elsewhere.
    @Test func aBadRowIsReportedByOnePartOfASplitTable() throws {
        let csv = "url,n\n\(server.url("photo.jpg")),1\n,2\n\(server.url("logo.png")),3\nnot a url,4\n"
        let path = try table(csv, name: "split.csv")
        var reported = 0, badLines = 0
        for part in 0..<3 {
            let result = try fetch(["--json", "prefetch", "--shard", "\(part)/3", path])
            let bad = try answers(result).filter { $0["error"] != nil }
            badLines += bad.count
            if !bad.isEmpty { reported += 1 }
            #expect(result.status == (bad.isEmpty ? 0 : 1), "part \(part): \(result.standardError)")
            let counts = try summary(result)
            #expect((counts["urls"] as? Int ?? 0) + (counts["other_shards"] as? Int ?? 0) == 4, "part \(part): \(counts)")
            // Rows left to other parts are theirs to answer: no line here, and no "repeat".
            #expect(try answers(result).allSatisfy { $0["repeat"] == nil }, "part \(part): \(result.output)")
        }
        // The row without a URL and the one that is not a URL: each reported once, by one part.
        #expect(badLines == 2 && reported >= 1)
    }

    /// A header naming the URL's column twice: the last one is the URL, as for any duplicate name;
    /// a sha256 column and a URL's #sha256= that disagree make a bad row, named by its line.
    @Test func duplicateURLColumnsAndTwoPinsAreReadOneWay() throws {
        let csv = "url,caption,url\n\(server.url("logo.png")),c,\(server.url("photo.jpg"))\n"
        let rows = try answers(try fetch(["--json", "prefetch", try table(csv, name: "dup.csv")]))
        #expect(rows.count == 1 && (rows[0]["url"] as? String) == server.url("photo.jpg"), "\(rows)")
        #expect((rows[0]["row"] as? [String: String]) == ["caption": "c"], "\(rows)")
        let zeros = String(repeating: "0", count: 64)
        let pinned = "url,sha256\n\(server.url("logo.png"))#sha256=\(try digest("logo.png")),\(zeros)\n"
        let both = try fetch(["--json", "prefetch", try table(pinned, name: "pins.csv")])
        #expect(both.status == 1 && both.standardError.contains("line 2 of the list: its URL pins sha256"), "\(both.standardError)")
    }

    /// A table in a binary container (Parquet, zip, zstd…) is refused whole, named, before a line of
    /// it is taken for a URL; nothing of it is printed.
    @Test func aParquetOrZippedTableIsRefusedNamingWhatItIs() throws {
        for (magic, name) in [(Array("PAR1".utf8), "a Parquet file"), (Array("PK\u{03}\u{04}".utf8), "a zip archive"),
                              (Array("FEA1".utf8), "a Feather file"), ([0xFF, 0xFF, 0xFF, 0xFF], "an Arrow stream")] as [([UInt8], String)] {
            let path = try table("", name: "rows.parquet")
            try Data(magic + Array("\u{00}\u{01}binary\u{00}rows\nhttp://x/\u{00}\n".utf8)).write(to: URL(fileURLWithPath: path))
            let result = try fetch(["prefetch", path])
            #expect(result.status == 66 && result.standardError.contains("it is \(name)"), "\(result.standardError)")
            #expect(!result.standardError.contains("binary"), "\(result.standardError)")
            // No run to sum up: no summary of 0 URLs.
            #expect(result.output.isEmpty, "\(result.output)")
            // Gzipped, it is still what it is.
            let gzip = Process()
            gzip.executableURL = URL(fileURLWithPath: "/bin/gzip")
            gzip.arguments = ["-f", path]
            try gzip.run()
            gzip.waitUntilExit()
            let zipped = try fetch(["prefetch", path + ".gz"])
            #expect(zipped.status == 66 && zipped.standardError.contains("it is \(name), gzipped"), "\(zipped.standardError)")
        }
    }

    @Test func tsvJsonlAndGzippedTablesAreReadAsTheyCome() throws {
        // TSV with the URL in a column of another name.
        let tsv = "key\timage\tlabel\nk1\t\(server.url("photo.jpg"))\tcat\nk2\t\(server.url("logo.png"))\tdog\n"
        let fromTSV = try fetch(["--json", "prefetch", "--url-column", "image", try table(tsv, name: "pairs.tsv")])
        // A quote inside a TSV field is text (captions hold them), not a bad row as in CSV.
        let quoted = try fetch(["--json", "prefetch", try table("url\tcaption\n\(server.url("gray.jpg"))\the said \"hi\"\n", name: "quotes.tsv")])
        let caption = (try answers(quoted).first?["row"] as? [String: String])?["caption"]
        #expect(quoted.status == 0 && caption == "he said \"hi\"", "\(quoted.output)")
        #expect(fromTSV.status == 0, "\(fromTSV.standardError)")
        #expect(Set(try answers(fromTSV).compactMap { ($0["row"] as? [String: String])?["label"] }) == ["cat", "dog"])

        // JSONL: the other members as they are (numbers, arrays, objects).
        let jsonl = """
            {"url": "\(server.url("gray.jpg"))", "width": 40, "tags": ["a", "b"], "meta": {"nsfw": false}, "big": 18446744073709551615, "short": 1e5, "half": 0.5}

            {"caption": "no url"}
            not json at all
            {"url": 12}
            {"url": "  "}
            """
        let fromJSONL = try fetch(["--json", "prefetch", try table(jsonl, name: "rows.jsonl")])
        #expect(fromJSONL.status == 1)
        let rows = try answers(fromJSONL)
        let gray = try #require(rows.first { $0["path"] != nil })
        let row = try #require(gray["row"] as? [String: Any])
        #expect(row["width"] as? Int == 40 && row["tags"] as? [String] == ["a", "b"])
        #expect((row["meta"] as? [String: Bool]) == ["nsfw": false])
        // Numbers no Int64 or Double gives back as written go on as their table wrote them.
        let grayLine = try #require(fromJSONL.output.split(separator: "\n").first { $0.contains("gray.jpg") && $0.contains("\"row\"") })
        #expect(grayLine.contains("\"big\":18446744073709551615,\"short\":1e5,\"half\":0.5"), "\(grayLine)")
        let errors = rows.compactMap { $0["error"] as? String }.sorted()
        #expect(errors == ["line 3 of the list: no member \"url\"", "line 4 of the list: not JSON: unexpected word at byte 1",
                           "line 5 of the list: member \"url\" is not a URL string", "line 6 of the list: no URL in member \"url\""], "\(errors)")

        // The same CSV gzipped (told by its bytes, whatever the name), from a file and from standard input.
        let csv = "url,n\n\(server.url("anim.gif")),1\n\(server.url("alpha.webp")),2\n"
        let plain = try table(csv, name: "plain.csv")
        let gzip = Process()
        gzip.executableURL = URL(fileURLWithPath: "/bin/gzip")
        gzip.arguments = ["-k", plain]
        try gzip.run()
        gzip.waitUntilExit()
        let zipped = try fetch(["--json", "prefetch", plain + ".gz"])
        #expect(zipped.status == 0, "\(zipped.standardError)")
        #expect(try answers(zipped).compactMap { ($0["row"] as? [String: String])?["n"] }.sorted() == ["1", "2"])
        let outputs = try TemporaryDirectory("imgcache-piped")
        let pipe = Pipe()
        let process = try ImgCacheProcess.startCapturing(["--cache-dir", cacheRoot, "--json", "fetch", "--input-format", "csv", "-i", "-"],
                                                         home: home.path, outputs: outputs, input: pipe)
        try pipe.fileHandleForWriting.write(contentsOf: try Data(contentsOf: URL(fileURLWithPath: plain + ".gz")))
        try pipe.fileHandleForWriting.close()
        let piped = try ImgCacheProcess.result(of: process, outputs: outputs)
        #expect(piped.status == 0, "\(piped.standardError)")
        #expect(try answers(piped).compactMap { ($0["row"] as? [String: String])?["n"] } == ["1", "2"], "fetch -i keeps the order")

        // Cut short: what was read is answered, and the list is said to be unreadable.
        let bytes = try Data(contentsOf: URL(fileURLWithPath: plain + ".gz"))
        let cut = try table("", name: "cut.csv.gz")
        try bytes.prefix(bytes.count - 12).write(to: URL(fileURLWithPath: cut))
        let truncated = try fetch(["prefetch", cut])
        #expect(truncated.status == 66)
        #expect(truncated.standardError.contains("the gzip data is cut short"), "\(truncated.standardError)")
    }

    @Test func aTableWithoutItsURLColumnOrWithBrokenTextIsSaidSo() throws {
        let noColumn = try fetch(["prefetch", try table("name,link\na,\(server.url("photo.jpg"))\n", name: "links.csv")])
        #expect(noColumn.status == 66)
        #expect(noColumn.standardError.contains("no column \"url\" in the header (line 1: \"name\", \"link\"); name the URL's column with --url-column"),
                "\(noColumn.standardError)")
        #expect(server.requests.isEmpty)

        var latin1 = Data("url,caption\n".utf8)
        latin1 += Data("\(server.url("photo.jpg")),caf".utf8) + Data([0xE9]) + Data("\n".utf8)
        latin1 += Data("\(server.url("logo.png")),ok\n\"\(server.url("gray.jpg")),never closed\n".utf8)
        let path = work.appending("latin1.csv")
        try latin1.write(to: URL(fileURLWithPath: path))
        let result = try fetch(["--json", "prefetch", path])
        #expect(result.status == 1)
        let errors = try answers(result).compactMap { $0["error"] as? String }.sorted()
        #expect(errors == ["line 2 of the list: not UTF-8", "line 4 of the list: a quote opened on line 4 is never closed"], "\(errors)")
        #expect(try summary(result)["downloaded"] as? Int == 1)

        // Usage errors: an unknown format, a column for a list of lines, list options without a list.
        #expect(try fetch(["prefetch", "--input-format", "xml", path]).status == 64)
        #expect(try fetch(["prefetch", "--input-format", "lines", "--url-column", "u", path]).status == 64)
        #expect(try fetch(["fetch", "--url-column", "u", server.url("photo.jpg")]).status == 64)
    }

    /// The SHA-256 of fixture `name`, as hex.
    func digest(_ name: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        process.arguments = [Paths.fixtures.appendingPathComponent(name).path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return String(text.prefix(64))
    }

    @Test func pinnedBytesMustMatchOrNothingIsStoredOrServed() throws {
        let photo = try digest("photo.jpg"), gray = try digest("gray.jpg")
        let url = server.url("photo.jpg")
        // Other bytes than pinned: refused, nothing stored, not remembered as failed.
        let wrong = try fetch(["fetch", url + "#sha256=" + gray])
        #expect(wrong.status == 1)
        #expect(wrong.standardError.contains("sha256 mismatch: expected \(gray), got \(photo); nothing was stored"), "\(wrong.standardError)")
        #expect(CacheInspection.storedFiles(under: cacheRoot + "/default").isEmpty)
        // The pinned bytes: stored; the fragment was never sent (nor is it part of the key).
        let right = try fetch(["fetch", url + "#sha256=" + photo.uppercased()])
        #expect(right.status == 0, "\(right.standardError)")
        #expect(server.requests.allSatisfy { !$0.uri.contains("sha256") })
        #expect(try fetch(["fetch", "--cache-only", url]).output == right.output)
        // A cached entry with other bytes is not served for a pin: downloaded again (and refused here).
        let requests = server.requestCount("photo.jpg")
        let again = try fetch(["fetch", url + "#sha256=" + gray])
        #expect(again.status == 1 && server.requestCount("photo.jpg") == requests + 1)
        #expect(try fetch(["fetch", "--cache-only", url]).status == 0, "the entry that was there stays")
        // A malformed pin is an invalid URL.
        let malformed = try fetch(["fetch", url + "#sha256=abc"])
        #expect(malformed.status == 1 && malformed.standardError.contains("the sha256 pin is not 64 hexadecimal digits"))

        // An image replaced on the server: the cached old bytes give way to the pinned new ones.
        let swapped = faults.baseURL + "/swap/photo.jpg/gray.jpg"
        #expect(try fetch(["fetch", swapped]).status == 0)
        let replaced = try fetch(["--json", "fetch", swapped + "#sha256=" + gray])
        #expect(replaced.status == 0, "\(replaced.standardError)")
        #expect(try replaced.jsonLines().first?["bytes"] as? Int == (try Paths.fixture("gray.jpg")).count)

        // One URL twice with two pins: each row is checked against its own.
        let twice = "url,sha256\n\(server.url("photo.jpg")),\(gray)\n\(server.url("photo.jpg")),\(photo)\n"
        let both = try answers(try fetch(["--json", "fetch", "-i", try table(twice, name: "twice.csv")]))
        #expect(both.count == 2 && both[0]["error"] != nil && both[1]["path"] != nil, "\(both)")

        // A pin of zeros after the same URL unpinned: its own request, refused; with --thumbnail too,
        // and so in export. A JSONL number in the sha256 column is a pin that does not read.
        let zeros = String(repeating: "0", count: 64)
        let unpinnedFirst = try table("url,sha256\n\(server.url("photo.jpg")),\n\(server.url("photo.jpg")),\(zeros)\n", name: "zeros.csv")
        for options in [[String](), ["--thumbnail", "16x16"]] {
            // (prefetch answers as the rows finish: told apart by their pin.)
            let rows = try answers(try fetch(["--json", "prefetch"] + options + [unpinnedFirst]))
            let pinned = rows.first { ($0["row"] as? [String: String])?["sha256"] == zeros }
            let plain = rows.first { ($0["row"] as? [String: String])?["sha256"] == "" }
            #expect(rows.count == 2 && plain?["path"] != nil && pinned?["repeat"] == nil
                    && (pinned?["error"] as? String)?.contains("sha256 mismatch") == true, "\(options): \(rows)")
            let out = work.appending("zeros-export-\(options.count)")
            let exported = try fetch(["export", "--webdataset", out] + options + [unpinnedFirst])
            #expect(exported.status == 1, "\(options): \(exported.standardError)")
            let manifest = try String(contentsOfFile: out + "/manifest.jsonl", encoding: .utf8)
            #expect(manifest.components(separatedBy: "\"status\":\"exported\"").count == 2, "\(options): \(manifest)")
        }
        let numbered = try table("{\"url\":\"\(server.url("logo.png"))\",\"sha256\":12345}\n", name: "numbered.jsonl")
        let number = try fetch(["fetch", "-i", numbered])
        #expect(number.status == 1 && number.standardError.contains("line 1 of the list: its sha256 (12345) is not 64 hexadecimal digits"),
                "\(number.standardError)")
        #expect(!number.standardError.contains("#sha256=12345"))

        // A table's sha256 column pins its row.
        let csv = "url,sha256\n\(server.url("logo.png")),\(try digest("logo.png"))\n\(server.url("gray.jpg")),\(photo)\n"
        let table = try fetch(["--json", "prefetch", try table(csv, name: "pinned.csv")])
        let lines = try answers(table)
        #expect(lines.filter { $0["path"] != nil }.count == 1)
        #expect((lines.first { $0["error"] != nil }?["error"] as? String)?.contains("sha256 mismatch") == true)
    }
}
