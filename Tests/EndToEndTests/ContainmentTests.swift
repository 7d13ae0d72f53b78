import Foundation
import ImgCacheCore
import Testing

/// Hostile images cost bounded time and memory: every decode in a confined
/// worker with its own limits, imgcache itself never allocating an image's
/// pixels, dying of one, or outliving a signal. The corpus is written by
/// Tests/Fixtures/make_hostile_corpus.py and served by nginx.
@Suite final class ContainmentTests {
    let corpus: NginxServer
    let home: TemporaryDirectory
    let cacheRoot: String

    /// The corpus, written once for the whole run.
    static let corpusFolder: String = {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("imgcache-hostile-\(getpid())").path
        let script = Paths.repository.appendingPathComponent("Tests/Fixtures/make_hostile_corpus.py").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script, folder]
        try? process.run()
        process.waitUntilExit()
        return folder
    }()

    init() throws {
        corpus = try NginxServer(serving: URL(fileURLWithPath: ContainmentTests.corpusFolder))
        home = try TemporaryDirectory()
        cacheRoot = home.appending("cache")
    }

    func run(_ arguments: [String], environment: [String: String] = [:]) throws -> RunResult {
        try ImgCacheProcess.run(["--cache-dir", cacheRoot] + arguments, environment: environment, home: home.path)
    }

    /// `prefetch --stats` of one URL with `options`: what it printed and its numbers.
    func prefetch(_ name: String, _ options: [String]) throws -> (result: RunResult, stats: [String: Any]) {
        let list = try home.write(lines: [corpus.url(name)], to: "one.txt")
        let statsFile = home.appending("stats.json")
        try? FileManager.default.removeItem(atPath: statsFile)
        let result = try run(["prefetch", "--stats", statsFile] + options + [list])
        let stats = (try? JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: statsFile)))) as? [String: Any] ?? [:]
        return (result, stats)
    }

    /// Files a run left behind that are not entries: temporary files.
    func temporaryFiles() -> [String] {
        CacheInspection.files(under: cacheRoot).filter { ($0 as NSString).lastPathComponent.hasPrefix("tmp.") }
    }

    static let hostile = ["filters.svg", "blur.svg", "data-bomb.svg", "data-bomb-hidden.svg", "entities.svg", "long-prolog.svg",
                          "apng-bad-frame.png", "apng-lying.png", "apng-huge-frame.png", "huge.jxl", "rle.bmp", "huge.png",
                          "huge.tiff", "many-frames.gif", "data-many.svg", "text-chunk.png"]

    /// Every hostile file, plain, fully verified, thumbnailed and converted: each run ends with 0 or
    /// 1 (never a signal), imgcache's own memory stays small whatever the image, the workers' within
    /// their budget, and no temporary file is left.
    @Test(arguments: [[], ["--verify", "full"], ["--thumbnail", "64x"], ["--format", "webp"]])
    func everyHostileImageCostsBoundedMemoryAndEndsWithAnAnswer(mode: [String]) throws {
        let budget = 512 << 20
        for name in Self.hostile {
            let (result, stats) = try prefetch(name, ["--max-decode-time", "3s", "--max-decode-memory", "512M"] + mode)
            #expect(result.status == 0 || result.status == 1, "\(name) \(mode): \(result.status) \(result.standardError)")
            #expect(!result.standardError.contains("Fatal error") && !result.standardError.contains("Backtrac"), "\(name)")
            let own = stats["peak_memory"] as? Int ?? .max, workers = stats["decode_peak_memory"] as? Int ?? .max
            #expect(own < 100 << 20, "\(name) \(mode): imgcache itself took \(own >> 20) MiB")
            // The job's budget, plus what a worker holds beside it (the program, its libraries).
            #expect(workers < budget + (256 << 20), "\(name) \(mode): a worker took \(workers >> 20) MiB")
            #expect(temporaryFiles().isEmpty, "\(name) \(mode): \(temporaryFiles())")
            _ = try run(["clear"])
        }
    }

    @Test func aPlainFetchOfAHugeJPEGXLDecodesNoPixelAndStartsNoWorker() throws {
        let (jxl, jxlStats) = try prefetch("huge.jxl", [])
        #expect(jxl.status == 0, "\(jxl.standardError)")
        let (png, pngStats) = try prefetch("long-prolog.svg", [])
        #expect(png.status == 0)
        let jxlPeak = jxlStats["peak_memory"] as? Int ?? .max, pngPeak = pngStats["peak_memory"] as? Int ?? 0
        // 9000x9000 would be 324 MB of pixels: the header alone is read, as for any small file.
        #expect(jxlPeak < pngPeak + (16 << 20), "JPEG XL \(jxlPeak >> 20) MiB, SVG \(pngPeak >> 20) MiB")
        #expect(jxlStats["decode_workers"] as? Int == 0 && pngStats["decode_workers"] as? Int == 0)
        let json = try run(["--json", "fetch", "--cache-only", corpus.url("huge.jxl")])
        let line = try #require(try json.jsonLines().first)
        #expect(line["width"] as? Int == 9000 && line["height"] as? Int == 9000 && line["format"] as? String == "jxl")
    }

    @Test func aDecodeThatTakesTooLongFailsThatImageNamingTheFormatAndTheRunGoesOn() throws {
        let list = try home.write(lines: [corpus.url("filters.svg"), corpus.url("long-prolog.svg")])
        let result = try run(["prefetch", "--verify", "full", "--max-decode-time", "1s", list])
        #expect(result.status == 1)
        #expect(result.standardError.contains("filters.svg: the SVG took more than 1 s to draw (its limit, --max-decode-time); nothing was stored"),
                "\(result.standardError)")
        // The next image still decodes, in a worker started in place of the killed one.
        #expect(result.output.contains("1 downloaded"), "\(result.output)")
        #expect(temporaryFiles().isEmpty)
        // Remembered by the namespace, it applies to later runs; the option wins over it.
        #expect(try run(["config", "--max-decode-time", "1s"]).status == 0)
        let remembered = try run(["fetch", "--verify", "full", corpus.url("filters.svg")])
        #expect(remembered.standardError.contains("more than 1 s to draw"), "\(remembered.standardError)")
        #expect(try run(["--json", "config"]).output.contains("\"max_decode_time\":1.0,\"max_decode_time_source\":\"remembered\""))
    }

    @Test func aDecodeThatNeedsTooMuchMemoryFailsThatImageOnly() throws {
        let result = try run(["fetch", "--verify", "full", "--max-decode-memory", "64MiB", corpus.url("huge.png")])
        #expect(result.status == 1)
        #expect(result.standardError.contains("huge.png: the PNG decoder needed more than 64 MiB (its limit, --max-decode-memory); nothing was stored"),
                "\(result.standardError)")
        // Not a failure of the URL's: another run with more memory takes it.
        #expect(try run(["fetch", "--verify", "full", corpus.url("huge.png")]).status == 0)
    }

    @Test func anEncoderThatWouldNeedMoreThanTheBudgetIsNotStarted() throws {
        let result = try run(["fetch", "--format", "avif", "--max-decode-memory", "256MiB", corpus.url("huge.png")])
        #expect(result.status == 1)
        #expect(result.standardError.contains("writing a 10000×10000 AVIF would need about"), "\(result.standardError)")
        #expect(result.standardError.contains("(256 MiB, --max-decode-memory); the original stays in the cache"), "\(result.standardError)")
    }

    @Test func underAnAddressSpaceLimitImgcacheReportsTheImageAndNeverDiesOfASignal() throws {
        for arguments in [["--verify", "full"], ["--thumbnail", "64x"], ["--format", "jxl"]] {
            for name in ["huge.png", "huge.jxl", "huge.tiff"] {
                let words = ([Paths.binary, "--cache-dir", cacheRoot, "fetch"] + arguments + [corpus.url(name)]).map { "'\($0)'" }
                let result = try ImgCacheProcess.runShell("ulimit -v 700000; " + words.joined(separator: " "),
                                                          environment: ["PATH": "/usr/bin:/bin"], home: home.path, workingDirectory: home.path)
                #expect([0, 1, 71].contains(result.status), "\(name) \(arguments): \(result.status) \(result.standardError)")
                if result.status != 0 {
                    #expect(result.standardError.contains("\(name): "), "\(name) \(arguments): \(result.standardError)")
                }
                #expect(!result.standardError.contains("Fatal error"), "\(result.standardError)")
                _ = try run(["clear"])
            }
        }
    }

    /// Under an address-space limit too small to decode in, imgcache says so with 71 (the system
    /// refused a resource), whether it is too small for imgcache itself, for a library it loads, or
    /// for a worker; never a signal, never a library called missing.
    @Test(arguments: [60_000, 100_000, 140_000, 180_000])
    func underATinyAddressSpaceLimitTheRunEndsWith71(kilobytes: Int) throws {
        let words = [Paths.binary, "--cache-dir", cacheRoot, "fetch", "--thumbnail", "16x", "--format", "webp", corpus.url("long-prolog.svg")]
        let result = try ImgCacheProcess.runShell("ulimit -v \(kilobytes); " + words.map { "'\($0)'" }.joined(separator: " "),
                                                  environment: ["PATH": "/usr/bin:/bin"], home: home.path, workingDirectory: home.path)
        #expect([0, 71].contains(result.status), "\(kilobytes): \(result.status) \(result.standardError)")
        if result.status == 71 { #expect(result.standardError.contains("ulimit -v"), "\(kilobytes): \(result.standardError)") }
        #expect(!result.standardError.contains("Fatal error") && !result.standardError.contains("install the"), "\(result.standardError)")
    }

    @Test func aSignalDuringADecodeEndsTheRunAtOnce() throws {
        let outputs = try TemporaryDirectory("imgcache-signal")
        let process = try ImgCacheProcess.startCapturing(["--cache-dir", cacheRoot, "fetch", "--verify", "full", corpus.url("filters.svg")],
                                                         home: home.path, outputs: outputs)
        defer { kill(process.processIdentifier, SIGKILL) }
        // Until its worker is drawing (bounded: 20 s), then one SIGTERM.
        let parent = process.processIdentifier
        var worker: Int32?
        for _ in 0..<2000 where worker == nil {
            worker = Self.workers(of: parent).first
            if worker == nil { usleep(10_000) }
        }
        #expect(worker != nil, "no decode worker started")
        kill(parent, SIGTERM)
        let result = try ImgCacheProcess.result(of: process, outputs: outputs, limit: 10)
        #expect(result.status == 143, "\(result.status): \(result.standardError)")
        #expect(result.standardError.contains("interrupted by SIGTERM"), "\(result.standardError)")
        #expect(temporaryFiles().isEmpty)
        // No worker outlives it.
        if let worker { #expect(kill(worker, 0) != 0 || Self.isZombie(worker), "worker \(worker) still runs") }
    }

    /// The decode workers whose parent is `parent`.
    static func workers(of parent: Int32) -> [Int32] {
        let processes = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return processes.compactMap(Int32.init).filter { pid in
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
                  status.contains("\nPPid:\t\(parent)\n"),
                  let line = try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8) else { return false }
            return line.contains("--decode-worker")
        }
    }

    static func isZombie(_ pid: Int32) -> Bool {
        ((try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? "").contains(") Z ")
    }

    // MARK: - The sandbox

    @Test(arguments: ["socket", "exec", "kill-parent"])
    func aWorkerThatTriesSomethingNoDecoderNeedsIsKilledByItsFilter(attempt: String) throws {
        let result = try run(["fetch", "--thumbnail", "8x", corpus.url("long-prolog.svg")],
                             environment: ["IMGCACHE_WORKER_ATTEMPT": attempt])
        #expect(result.status == 1, "\(attempt) was allowed: \(result.standardError)")
        #expect(result.standardError.contains("was stopped by its sandbox (it made a forbidden system call)"), "\(result.standardError)")
        // The original stays: the failure was the worker's, not the image's.
        #expect(try run(["fetch", "--cache-only", corpus.url("long-prolog.svg")]).status == 0)
    }

    @Test func aWorkerCannotCreateAFile() throws {
        let result = try run(["-v", "fetch", "--thumbnail", "8x", corpus.url("long-prolog.svg")],
                             environment: ["IMGCACHE_WORKER_ATTEMPT": "write"])
        #expect(result.status == 0, "\(result.standardError)")
        // What the worker printed is shown with -v only, after the URL.
        #expect(result.standardError.contains("long-prolog.svg: tried write: refused: "), "\(result.standardError)")
        #expect(!FileManager.default.fileExists(atPath: home.appending("imgcache-worker-attempt")))
        let quiet = try run(["fetch", "--thumbnail", "9x", corpus.url("long-prolog.svg")], environment: ["IMGCACHE_WORKER_ATTEMPT": "write"])
        #expect(quiet.status == 0 && !quiet.standardError.contains("tried write"), "\(quiet.standardError)")
    }

    /// strace -f of a cache hit and of a plain prefetch: no process started; of a thumbnail, one
    /// worker, imgcache's own binary.
    @Test func aHitAndAPlainPrefetchStartNoProcess() throws {
        let url = corpus.url("long-prolog.svg")
        #expect(try run(["fetch", url]).status == 0)
        let list = try home.write(lines: [corpus.url("huge.png"), corpus.url("rle.bmp")])
        for (label, words) in [("hit", ["fetch", url]), ("prefetch", ["prefetch", list]), ("thumbnail", ["fetch", "--thumbnail", "8x", url])] {
            let trace = home.appending("trace-\(label)")
            let command = (["strace", "-f", "-qq", "-e", "trace=execve,clone,clone3,fork,vfork", "-o", trace, Paths.binary, "--cache-dir", cacheRoot]
                           + words).map { "'\($0)'" }.joined(separator: " ")
            let result = try ImgCacheProcess.runShell(command, environment: ["PATH": "/usr/bin:/bin"], home: home.path, workingDirectory: home.path)
            #expect(result.status == 0, "\(label): \(result.standardError)")
            let lines = try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n")
            let programs = lines.filter { $0.contains("execve(") && !$0.contains("resumed") }
            let processes = lines.filter { ($0.contains("clone(") || $0.contains("clone3(")) && !$0.contains("CLONE_THREAD") && !$0.contains("resumed") }
                + lines.filter { $0.contains("fork(") && !$0.contains("resumed") }
            if label == "thumbnail" {
                #expect(programs.count == 2 && programs[1].contains("/proc/self/exe") && programs[1].contains("--decode-worker"), "\(programs)")
            } else {
                #expect(programs.count == 1 && processes.isEmpty, "\(label) started: \(programs) \(processes)")
            }
        }
    }

    /// What the C libraries print reaches stderr only with -v, after the URL: never imgcache's
    /// own lines, with or without -q, whether imgcache read the header or a worker decoded.
    @Test func aLibrarysOwnLinesAreShownOnlyWithVerboseAfterTheURL() throws {
        for arguments in [["-q", "fetch"], ["fetch"], ["fetch", "--verify", "full"]] {
            for name in ["garbage.jxl", "bad-pixels.jxl"] {
                let result = try run(arguments + [corpus.url(name)])
                // A header that holds with noise after it passes the header check (nothing marks a JPEG XL's last frame's end).
                let refused = name == "garbage.jxl" || arguments.contains("full")
                #expect(result.status == (refused ? 1 : 0), "\(name) \(arguments)")
                _ = try run(["clear"])
                #expect(result.errorLines.allSatisfy { $0.hasPrefix("imgcache: ") }, "\(name) \(arguments): \(result.standardError)")
            }
        }
        let verbose = try run(["-v", "fetch", "--verify", "full", corpus.url("bad-pixels.jxl")])
        #expect(verbose.errorLines.allSatisfy { $0.hasPrefix("imgcache: ") }, "\(verbose.standardError)")
    }

    // MARK: - What limits count

    /// A TIFF is its first page, for every check as for every conversion: a third page whose strip
    /// is noise (its structure whole) does not keep it out of the cache, even with --verify full.
    @Test func aTIFFIsItsFirstPageForTheFullCheckToo() throws {
        let url = corpus.url("third-page-broken.tiff")
        let full = try run(["--json", "fetch", "--verify", "full", url])
        #expect(full.status == 0, "\(full.standardError)")
        let row = try full.jsonLines().first
        #expect(row?["format"] as? String == "tiff" && row?["frames"] as? Int == 1, "\(full.output)")
        #expect(try run(["fetch", "--format", "png", url]).status == 0)
    }

    @Test func anAnimationsFramesCountTogetherAndTheMessageSaysSo() throws {
        let result = try run(["fetch", "--verify", "full", corpus.url("many-frames.gif")])
        #expect(result.status == 1)
        #expect(result.standardError.contains("2000 frames of 2000×2000 pixels (8000 megapixels in all) is over the limit of 100 megapixels"),
                "\(result.standardError)")
        // Counted as the pixel limit's failure, as a header's refusal is.
        let (_, stats) = try prefetch("many-frames.gif", ["--verify", "full"])
        #expect(stats["failures"] as? [String: Int] == ["too_many_pixels": 1], "\(stats)")
    }

    @Test func anAPNGsFramesAreCheckedAgainstItsCanvasAndDecodedEveryOne() throws {
        // An acTL announcing 2147483647 frames: a still, its default image (as Chromium shows it).
        let lying = try run(["--json", "fetch", "--verify", "full", corpus.url("apng-lying.png")])
        let frames = try lying.jsonLines().first?["frames"] as? Int
        #expect(lying.status == 0 && (frames ?? 1) == 1, "\(lying.output) \(lying.standardError)")
        _ = try run(["clear"])
        let huge = try run(["fetch", corpus.url("apng-huge-frame.png")])
        #expect(huge.standardError.contains("frame 2 (60000×60000 at 0,0) lies outside the 20×10 canvas"), "\(huge.standardError)")
        // A bad third frame passes the header check but not a decode of every frame.
        #expect(try run(["fetch", corpus.url("apng-bad-frame.png")]).status == 0)
        _ = try run(["clear"])
        let full = try run(["fetch", "--verify", "full", corpus.url("apng-bad-frame.png")])
        #expect(full.status == 1 && full.standardError.contains("corrupt PNG image"), "\(full.standardError)")
        #expect(CacheInspection.storedFiles(under: cacheRoot + "/default").isEmpty)
    }

    /// A valid PNG with a 20 MB ancillary chunk before its pixels: its header is read without the
    /// chunk (from the body's head), under a tight ulimit -v too, so it is stored and never taken for damage.
    @Test func aHugeTextChunkIsNeitherReadNorTakenForDamage() throws {
        let url = corpus.url("text-chunk.png")
        let stored = try ImgCacheProcess.runShell("ulimit -v 700000; '\(Paths.binary)' --json --cache-dir '\(cacheRoot)' fetch '\(url)'",
                                                  environment: ["PATH": "/usr/bin:/bin"], home: home.path, workingDirectory: home.path)
        #expect(stored.status == 0, "\(stored.standardError)")
        let row = try stored.jsonLines().first
        #expect(row?["format"] as? String == "png" && row?["width"] as? Int == 4, "\(stored.output)")
        #expect(try run(["--json", "list", "--failed"]).output.isEmpty)
        // Its pixels decode too, in a worker.
        #expect(try run(["fetch", "--thumbnail", "2x", url]).status == 0)
    }

    /// Bodies larger than imgcache reads into its own memory are checked whole in a worker: a header
    /// 20 MB in (JPEG comments, a GIF comment, a TIFF's first directory) is read and the image
    /// stored; a megabyte cut from the middle is found though the first and last bytes look whole.
    @Test func aLargeBodyIsCheckedWholeInAWorker() throws {
        for name in ["late-header.jpg", "late-header.gif", "late-header.tiff"] {
            let (result, stats) = try prefetch(name, [])
            #expect(result.status == 0, "\(name): \(result.standardError)")
            #expect(stats["decode_workers"] as? Int == 1 && (stats["peak_memory"] as? Int ?? .max) < 100 << 20, "\(name): \(stats)")
        }
        let cut = try run(["fetch", corpus.url("text-chunk-cut.png")])
        #expect(cut.status == 1 && cut.standardError.contains("truncated PNG image"), "\(cut.standardError)")
        #expect(try run(["list", "--failed"]).output.contains("text-chunk-cut.png"))
    }

    @Test func imagesEmbeddedInAnSVGCountAgainstThePixelLimitHoweverTheyAreSpelt() throws {
        for name in ["data-bomb.svg", "data-bomb-hidden.svg"] {
            let result = try run(["fetch", "--max-pixels", "1M", corpus.url(name)])
            #expect(result.status == 1 && result.standardError.contains("a 10×10 SVG with 1 embedded image (2500 megapixels in all) is over the limit of 1 megapixels"),
                    "\(name): \(result.standardError)")
        }
        // A hundred images each within the limit are decoded together when it is drawn: their pixels add up.
        let many = try run(["fetch", corpus.url("data-many.svg")])
        #expect(many.status == 1 && many.standardError.contains("a 10×10 SVG with 100 embedded images (200 megapixels in all) is over the limit of 100 megapixels"),
                "\(many.standardError)")
        let allowed = try run(["--json", "fetch", "--max-pixels", "201M", "--verify", "full", corpus.url("data-many.svg")])
        #expect(allowed.status == 0, "\(allowed.standardError)")
        // The root element after 100 KB of prolog is still an SVG.
        let prolog = try run(["--json", "fetch", corpus.url("long-prolog.svg")])
        #expect(try prolog.jsonLines().first?["format"] as? String == "svg", "\(prolog.standardError)")
    }
}
