import Foundation
import Testing

/// `imgcache export --to URL`: a data set written straight into an S3 bucket
/// (moto) or a WebDAV store (wsgidav, nginx): the same shards a folder gets,
/// byte for byte, the manifest last, and an export killed midway leaving no
/// partial shard under a shard's name and no manifest.
@Suite final class ExportToStoreTests {
    let work: TemporaryDirectory
    let images: NginxServer
    let home: TemporaryDirectory
    let cacheRoot: String
    /// Where shards wait before they are sent ($TMPDIR of every run).
    let staging: String
    static let rows = 40
    static let shardSize = 2

    init() throws {
        work = try TemporaryDirectory("imgcache-export-store")
        // A noisy 1000x1000 BMP (3 MB): a shard of two takes long enough to send that a kill lands in one.
        try FileManager.default.createDirectory(atPath: work.appending("www"), withIntermediateDirectories: true)
        try ExportToStoreTests.noiseBMP(width: 1000, height: 1000).write(to: URL(fileURLWithPath: work.appending("www/big.bmp")))
        // moto is Python, and slower: a third of the bytes there.
        try ExportToStoreTests.noiseBMP(width: 600, height: 600).write(to: URL(fileURLWithPath: work.appending("www/mid.bmp")))
        try Data(try Paths.fixture("logo.png")).write(to: URL(fileURLWithPath: work.appending("www/logo.png")))
        images = try NginxServer(serving: URL(fileURLWithPath: work.appending("www")))
        home = try TemporaryDirectory()
        cacheRoot = home.appending("cache")
        staging = work.appending("tmp")
        try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
    }

    static func noiseBMP(width: Int, height: Int) -> Data {
        let row = (width * 3 + 3) / 4 * 4
        var bytes = [UInt8](repeating: 0, count: 54 + row * height)
        func put(_ value: Int, at offset: Int, size: Int) { for i in 0..<size { bytes[offset + i] = UInt8((value >> (8 * i)) & 0xFF) } }
        bytes[0] = 0x42; bytes[1] = 0x4D
        put(bytes.count, at: 2, size: 4); put(54, at: 10, size: 4); put(40, at: 14, size: 4)
        put(width, at: 18, size: 4); put(height, at: 22, size: 4); put(1, at: 26, size: 2); put(24, at: 28, size: 2)
        put(row * height, at: 34, size: 4)
        var state: UInt32 = 2463534242
        for index in 54..<bytes.count {
            state ^= state << 13; state ^= state >> 17; state ^= state << 5
            bytes[index] = UInt8(truncatingIfNeeded: state)
        }
        return Data(bytes)
    }

    func run(_ arguments: [String], environment: [String: String] = [:]) throws -> RunResult {
        try ImgCacheProcess.run(["--cache-dir", cacheRoot] + arguments, environment: environment.merging(["TMPDIR": staging]) { $1 },
                                home: home.path)
    }

    /// A table of `rows` rows of the big image (a row that failed and one never fetched among them), prefetched,
    /// and the reference export of it into a local folder.
    func prepared(image: String = "big.bmp") throws -> (table: String, reference: String) {
        var lines = ["url,caption"]
        for row in 0..<ExportToStoreTests.rows {
            lines.append(row == 5 ? images.url("missing.png") + ",gone" : row == 7 ? images.url("logo.png") + ",never" : images.url(image) + ",row \(row)")
        }
        let cached = try work.write(lines: lines.filter { !$0.hasSuffix(",never") }, to: "cached.csv")
        #expect(try run(["prefetch", cached]).status == 1)
        let table = try work.write(lines: lines, to: "table.csv")
        let reference = work.appending("reference")
        let local = try run(["export", "--webdataset", reference, "--shard-size", String(ExportToStoreTests.shardSize), "--caption-column", "caption", table])
        #expect(local.status == 1 && local.output.contains("38 exported in 19 shards"), "\(local.output) \(local.standardError)")
        return (table, reference)
    }

    func exportArguments(_ table: String, to url: String) -> [String] {
        ["export", "--to", url, "--shard-size", String(ExportToStoreTests.shardSize), "--caption-column", "caption", table]
    }

    func file(_ path: String) -> Data? { FileManager.default.contents(atPath: path) }

    /// The staging folders in TMPDIR (not the stores' lock files beside them).
    func stagingFolders() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: staging).filter { $0.hasPrefix("imgcache-export.") }
    }

    /// The names a local export wrote, and their bytes.
    func referenceObjects(_ reference: String) throws -> [String: Data] {
        var objects: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: reference) where !name.hasPrefix(".") {
            objects[name] = file(reference + "/" + name)
        }
        return objects
    }

    /// Starts the export to `url` with the table coming through a pipe held open, so that it cannot finish:
    /// half the rows, then, once `shardThere()` sees a shard in the store, ten more rows and a SIGKILL at once
    /// (while those are being written and sent). Bounded in count and time.
    func killedMidway(_ table: String, to url: String, environment: [String: String] = [:], shardThere: () throws -> Bool) throws -> Bool {
        let lines = try String(contentsOfFile: table, encoding: .utf8).split(separator: "\n").map(String.init)
        let input = Pipe()
        let outputs = try TemporaryDirectory("imgcache-export-killed")
        let process = try ImgCacheProcess.startCapturing(["--cache-dir", cacheRoot, "export", "--to", url, "--shard-size", String(ExportToStoreTests.shardSize),
                                                          "--caption-column", "caption", "--input-format", "csv", "-"],
                                                         environment: environment.merging(["TMPDIR": staging]) { $1 }, home: home.path,
                                                         outputs: outputs, input: input)
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) }; process.waitUntilExit() }
        input.fileHandleForWriting.write(Data((lines[0...20].joined(separator: "\n") + "\n").utf8))
        var seen = false
        let deadline = Date().addingTimeInterval(60)
        for _ in 0..<1_200 where process.isRunning && Date() < deadline {
            if try shardThere() { seen = true; break }
            usleep(50_000)
        }
        input.fileHandleForWriting.write(Data((lines[21...30].joined(separator: "\n") + "\n").utf8))
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        return seen && process.terminationReason == .uncaughtSignal
    }

    /// A second export into a store prefix another export of this machine is writing is refused (exit
    /// 74), before anything is sent: two would replace each other's shards under one manifest.
    @Test func aSecondExportIntoAStoreBeingWrittenIsRefused() throws {
        let (table, _) = try prepared()
        let store = try WsgidavServer()
        let lines = try String(contentsOfFile: table, encoding: .utf8).split(separator: "\n").map(String.init)
        let input = Pipe()
        let outputs = try TemporaryDirectory("imgcache-export-first")
        let first = try ImgCacheProcess.startCapturing(["--cache-dir", cacheRoot, "export", "--to", store.url("sets/busy"), "--caption-column", "caption",
                                                        "--input-format", "csv", "-"],
                                                       environment: ["TMPDIR": staging], home: home.path, outputs: outputs, input: input)
        defer { if first.isRunning { kill(first.processIdentifier, SIGKILL) }; first.waitUntilExit() }
        input.fileHandleForWriting.write(Data((lines[0...4].joined(separator: "\n") + "\n").utf8))
        // The first holds the store once its staging folder is there.
        for _ in 0..<400 where (try? stagingFolders().isEmpty) ?? true { usleep(25_000) }
        let second = try run(exportArguments(table, to: store.url("sets/busy")))
        #expect(second.status == 74 && second.standardError.contains("another export is writing"), "\(second.status) \(second.standardError)")
        // The same store however its URL is spelled: a trailing slash, an empty segment, an escape,
        // the host's name, capitals, a port with a leading zero, an IPv4 address mapped into IPv6, slashes escaped.
        let port = store.url().split(separator: ":").last.map(String.init) ?? ""
        for spelled in [store.url("sets/busy/"), store.url("/sets//busy"), store.url("%73ets/busy"),
                        "http://localhost:\(port)/sets/busy", "HTTP://127.0.0.1:\(port)/sets/busy", "http://127.0.0.1:0\(port)/sets/busy",
                        "http://[::ffff:127.0.0.1]:\(port)/sets/busy", store.url("sets%2Fbusy"), store.url("sets/busy%2f%2F")] {
            let again = try run(exportArguments(table, to: spelled))
            #expect(again.status == 74 && again.standardError.contains("another export is writing"), "\(spelled): \(again.status) \(again.standardError)")
        }
        // `..` escaped as a server that decodes `%2F` reads it is refused as `..` is.
        let escaped = try run(exportArguments(table, to: store.url("sets/%2e%2e%2fescape")))
        #expect(escaped.status == 64 && escaped.standardError.contains("has a '.' or '..' in its path"), "\(escaped.standardError)")
        // Another prefix is another store.
        #expect(try run(exportArguments(table, to: store.url("sets/other"))).status == 1)
        try input.fileHandleForWriting.close()
        first.waitUntilExit()
        #expect(first.terminationStatus == 1 || first.terminationStatus == 0, "\(first.terminationStatus)")
        // Each export removes its lock file as it ends: none piles up in TMPDIR.
        let left = try FileManager.default.contentsOfDirectory(atPath: staging).filter { $0.hasPrefix("imgcache-exporting-") }
        #expect(left.isEmpty, "\(left)")
    }

    @Test func aWebDAVStoreGetsTheFolderShardsAndAKillLeavesNoPartialShardVisible() throws {
        let (table, reference) = try prepared()
        let expected = try referenceObjects(reference)
        let store = try WsgidavServer()
        let folder = store.root.appending("sets/run")
        let killed = try killedMidway(table, to: store.url("sets/run")) {
            ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).contains("00000.tar")
        }
        #expect(killed, "the export ended before it could be killed midway")
        let left = try FileManager.default.contentsOfDirectory(atPath: folder)
        #expect(!left.contains("manifest.jsonl"), "a manifest beside an unfinished data set: \(left)")
        let visible = left.filter { !$0.hasPrefix(".") }
        #expect(!visible.isEmpty && visible.count < 19, "\(left)")
        #expect(try stagingFolders().count == 1, "the killed run's staging folder")
        for name in visible { #expect(file(folder + "/" + name) == expected[name], "\(name) is not the whole shard") }

        // Again with bigger shards: one shard and the manifest, the killed run's hidden upload and its
        // staging folder gone with the stale shards.
        let bigger = try run(["export", "--to", store.url("sets/run"), "--caption-column", "caption", table])
        #expect(bigger.status == 1, "\(bigger.standardError)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).sorted() == ["00000.tar", "00000_stats.json", "manifest.jsonl"])
        #expect(try stagingFolders().isEmpty, "the killed run's staging folder stays")
        // Run again as before: the whole data set, byte for byte, and nothing hidden left.
        let again = try run(exportArguments(table, to: store.url("sets/run")))
        #expect(again.status == 1 && again.output.contains("38 exported in 19 shards"), "\(again.output) \(again.standardError)")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder).sorted()
        #expect(names == expected.keys.sorted().filter { $0 != ".imgcache-export" }, "\(names)")
        for name in names { #expect(file(folder + "/" + name) == expected[name], "\(name)") }
        #expect(try stagingFolders().isEmpty)
    }

    @Test func anS3BucketGetsTheFolderShardsTheManifestLastAndAKillLeavesWholeShardsOnly() throws {
        let (table, reference) = try prepared(image: "mid.bmp")
        let expected = try referenceObjects(reference)
        let s3 = try S3Server(bucket: "data")
        let url = "s3://data/sets/run?endpoint=\(s3.endpoint)&region=us-east-1"
        let killed = try killedMidway(table, to: url, environment: s3.credentials) { try !s3.keys().isEmpty }
        #expect(killed, "the export ended before it could be killed midway")
        var left = try s3.objects()
        #expect(left["sets/run/manifest.jsonl"] == nil, "a manifest beside an unfinished data set: \(left.keys.sorted())")
        #expect(!left.isEmpty && left.count < 19, "\(left.keys.sorted())")
        for (key, data) in left { #expect(data == expected[String(key.dropFirst("sets/run/".count))], "\(key) is not the whole shard") }

        let again = try run(exportArguments(table, to: url), environment: s3.credentials)
        #expect(again.status == 1 && again.output.contains("38 exported in 19 shards"), "\(again.output) \(again.standardError)")
        left = try s3.objects()
        #expect(left.keys.sorted() == expected.keys.filter { $0 != ".imgcache-export" }.map { "sets/run/" + $0 }.sorted())
        for (key, data) in left { #expect(data == expected[String(key.dropFirst("sets/run/".count))], "\(key)") }

        // Bigger shards: the shards the data set no longer has are removed, after the new manifest.
        let whole = try run(["export", "--to", url, "--caption-column", "caption", table], environment: s3.credentials)
        #expect(whole.status == 1 && whole.output.contains("38 exported in 1 shard"), "\(whole.output)")
        #expect(try s3.keys().sorted() == ["sets/run/00000.tar", "sets/run/00000_stats.json", "sets/run/manifest.jsonl"])

        // A wrong secret: refused before anything is read or written, exit 74, the data set as it was.
        var wrong = s3.credentials
        wrong["AWS_SECRET_ACCESS_KEY"] = "not-the-secret"
        let before = try s3.objects()
        let refused = try run(exportArguments(table, to: url), environment: wrong)
        #expect(refused.status == 74 && refused.standardError.contains("cannot export to s3://data/sets/run") && refused.standardError.contains("403"),
                "\(refused.standardError)")
        #expect(!refused.standardError.contains("not-the-secret"))
        #expect(try s3.objects() == before)
        // Every finished run took its staging folder away, and the first took the killed one's.
        #expect(try stagingFolders().isEmpty)

        // A bucket that is not there: said before anything is read or made.
        let nowhere = try run(exportArguments(table, to: "s3://no-such-bucket/x?endpoint=\(s3.endpoint)"), environment: s3.credentials)
        #expect(nowhere.status == 74 && nowhere.standardError.contains("no such bucket"), "\(nowhere.standardError)")
    }

    @Test func nginxTakesTheDataSetAndOptionsThatCannotMeetAreRefused() throws {
        let (table, reference) = try prepared()
        let expected = try referenceObjects(reference)
        let result = try run(exportArguments(table, to: images.url("datasets/a/b")))
        #expect(result.status == 1, "\(result.standardError)")
        let folder = images.storeDirectory.replacingOccurrences(of: "/store", with: "/datasets/a/b")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder).sorted()
        #expect(names == expected.keys.sorted().filter { $0 != ".imgcache-export" })
        for name in names { #expect(file(folder + "/" + name) == expected[name], "\(name)") }
        // A store without MOVE: said, exit 74, no shard under its name.
        let plain = try run(exportArguments(table, to: images.url("store/sets")))
        #expect(plain.status == 74 && plain.standardError.contains("MOVE"), "\(plain.standardError)")
        #expect(!FileManager.default.fileExists(atPath: images.storeDirectory + "/sets/00000.tar"))

        for (arguments, words) in [(["--to", images.url("x"), "--files", work.appending("f")], "--files"),
                                   (["--to", images.url("x"), "--webdataset", work.appending("w")], "--webdataset"),
                                   (["--to", "redis://127.0.0.1:1"], "Redis"),
                                   (["--to", "ftp://127.0.0.1/x"], "unsupported"),
                                   // A fragment would put every object at one key; ".." would reach another bucket or folder.
                                   (["--to", "s3://data/set#v2?endpoint=http://127.0.0.1:1"], "'#'"),
                                   (["--to", "s3://data/../victim/x?endpoint=http://127.0.0.1:1"], "'..'"),
                                   (["--to", images.url("datasets/../store/x")], "'..'"),
                                   (["--to", images.url("datasets/%2e%2e/store/x")], "'..'"),
                                   (["--to", "http://bob:secret-pw@127.0.0.1:1/x"], "user-env"),
                                   // "." or ".." as the bucket would resolve away on a path-style request.
                                   (["--to", "s3://../data/x?endpoint=http://127.0.0.1:1"], "bad bucket name"),
                                   (["--to", "s3://./data/x?endpoint=http://127.0.0.1:1"], "bad bucket name"),
                                   (["--to", "s3://data/x?endpoint=http://u:secret-pw@127.0.0.1:1"], "AWS_ACCESS_KEY_ID"),
                                   (["--to", images.url("x") + "|read-only"], "|read-only is not for"),
                                   (["--to", images.url("x") + "|ttl=3d"], "|ttl is not for")] {
            let refused = try run(["export"] + arguments + [table])
            #expect(refused.status == 64 && refused.standardError.contains(words), "\(arguments): \(refused.standardError)")
            #expect(!refused.standardError.contains("secret-pw"))
        }
        // A store that takes the connection and never answers: its timeout= is the one waited.
        let silent = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(silent) }
        var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: 0, sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(silent, $0, length) } }
        _ = listen(silent, 16)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(silent, $0, &length) } }
        let port = Int(UInt16(bigEndian: address.sin_port))
        let stalled = try run(exportArguments(table, to: "http://127.0.0.1:\(port)/x|timeout=1s"))
        #expect(stalled.status == 74 && stalled.standardError.contains("after 1 s"), "\(stalled.standardError)")
        #expect(try stagingFolders().isEmpty)
    }
}
