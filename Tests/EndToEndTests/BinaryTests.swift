import Foundation
import Testing

/// The binary as a whole: help, version, exit statuses and what it loads at start-up.
@Suite struct BinaryTests {
    let home: TemporaryDirectory

    init() throws { home = try TemporaryDirectory() }

    func run(_ arguments: [String], environment: [String: String] = [:]) throws -> RunResult {
        try ImgCacheProcess.run(arguments, environment: environment, home: home.path)
    }

    @Test func versionNamesEachLibraryFoundAndWhatItAllows() throws {
        let result = try run(["--version"])
        #expect(result.status == 0)
        #expect(result.lines.first == "imgcache 0.1.0")
        // Each library with a version that begins with a digit (or names its maker), found on this system.
        for name in ["libcurl", "libcrypto", "libpng", "libjpeg", "libwebp", "giflib", "hiredis"] {
            let line = result.lines.first { $0.hasPrefix(name + " ") }
            #expect(line != nil && line?.contains("not available") == false, "\(name): \(line ?? "missing")")
        }
        #expect(result.output.contains("libpng     1.6."), "\(result.output)")
        let features = Set(result.lines.last?.split(separator: " ").dropFirst().map(String.init) ?? [])
        #expect(features.isSuperset(of: ["https", "png", "jpeg", "gif", "webp", "redis", "s3", "avif", "heic", "jxl", "tiff", "svg", "bmp", "ico", "icc"]), "\(features)")
        // -v says where each came from: files that exist.
        let verbose = try run(["-v", "--version"])
        let paths = verbose.lines.filter { $0.trimmingCharacters(in: .whitespaces).hasPrefix("from /") }
            .map { String($0.trimmingCharacters(in: .whitespaces).dropFirst(5)) }
        #expect(paths.count == 13 && paths.allSatisfy { FileManager.default.fileExists(atPath: $0) }, "\(paths)")
    }

    @Test func helpListsEveryCommandAndExitStatus() throws {
        let result = try run(["--help"])
        #expect(result.status == 0)
        for command in ["fetch", "prefetch", "cache-info", "clean", "clear"] {
            #expect(result.output.contains("\n  \(command) "), "\(command)")
        }
        for status in ["0", "1", "64", "69", "73", "74", "141"] {
            #expect(result.output.contains("\n  \(status) "), "\(status)")
        }
        #expect(result.lines.count <= 40, "--help fits one screen")
    }

    @Test func commandHelpIsTheSameWithHelpCommandAndFlag() throws {
        let flag = try run(["fetch", "--help"])
        let command = try run(["help", "fetch"])
        #expect(flag.status == 0 && command.status == 0)
        #expect(flag.output == command.output)
        #expect(flag.output.hasPrefix("Usage: imgcache fetch [options] [URL...]\n"))
    }

    @Test func aTypoGetsASuggestionAndStatus64() throws {
        let result = try run(["fecth", "http://x/a.png"])
        #expect(result.status == 64)
        #expect(result.errorLines == ["imgcache: error: unknown command 'fecth' (did you mean 'fetch'?)",
                                      "Run 'imgcache --help' for the list of commands."])
    }

    /// curl's options that imgcache has no need of, or spells otherwise, say what to give instead; a
    /// format may be named by its extension (`jpg`), as `-o photo.jpg` names it.
    @Test(arguments: [("-s", "use -q (--quiet)"), ("--silent", "use -q (--quiet)"),
                      ("-L", "redirects are followed already (--max-redirects N limits them)"),
                      ("-O", "use -o FILE, or --output-dir DIR for copies named from their URLs"),
                      ("-f", "an HTTP error fails its URL already (exit 1)"), ("-A", "use -H 'User-Agent: NAME'"),
                      ("--user-agent", "use -H 'User-Agent: NAME'"), ("-P", "use --output-dir DIR"),
                      ("--compressed", "every encoding libcurl decodes is asked for and decoded already"),
                      ("--noproxy", "use -x \"\" for no proxy, or no_proxy in the environment"),
                      ("-nv", "imgcache prints errors and a summary only (-q: errors only)")])
    func curlsOptionsSayWhatToGiveInstead(option: String, advice: String) throws {
        let result = try run(["fetch", option, "x", "http://x/a.png"])
        #expect(result.status == 64)
        #expect(result.errorLines.first == "imgcache: error: unknown option '\(option)' for 'fetch': \(advice)", "\(result.errorLines)")
        let jpg = try run(["fetch", "--cache-only", "--format", "jpg,png", "http://x/a.png"])
        #expect(jpg.status == 1 && !jpg.standardError.contains("--format"), "\(jpg.standardError)")
    }

    /// fetch's -i given to prefetch, and curl's -I: each says what to give instead.
    @Test func optionsOfAnotherCommandOrToolSayWhatToGive() throws {
        let input = try run(["prefetch", "-i", "urls.txt"])
        #expect(input.status == 64 && input.errorLines.first == "imgcache: error: unknown option '-i' for 'prefetch': give the list itself: "
                + "imgcache prefetch FILE (or - for stdin); -i FILE is fetch's", "\(input.errorLines)")
        for option in ["-I", "--head"] {
            let head = try run(["fetch", option, "http://x/a.png"])
            #expect(head.status == 64 && head.standardError.contains("use imgcache --json fetch URL for an image's metadata"), "\(head.standardError)")
        }
        let long = try run(["prefetch", "--input", "urls.txt"])
        #expect(long.status == 64 && long.standardError.contains("give the list itself: imgcache prefetch FILE"), "\(long.standardError)")
    }

    @Test func aBadValueInACommandPointsToThatCommandsHelp() throws {
        let result = try run(["prefetch", "--thumbnail", "10"])
        #expect(result.status == 64)
        #expect(result.errorLines == ["imgcache: error: invalid value '10' for --thumbnail: expected WIDTHxHEIGHT, WIDTHx or xHEIGHT (each from 1 to 65535), comma-separated",
                                      "Run 'imgcache prefetch --help' for usage."])
    }

    @Test func colourIsUsedOnlyWhenAskedOnANonTerminal() throws {
        let plain = try run(["fecth"])
        #expect(!plain.standardError.contains("\u{1B}["))
        let forced = try run(["--color", "always", "fecth"])
        #expect(forced.standardError.contains("\u{1B}[1;31merror:"))
        let never = try run(["--color=never", "fecth"], environment: ["NO_COLOR": ""])
        #expect(!never.standardError.contains("\u{1B}["))
    }

    @Test func theBinaryDoesNotLoadLibcurlAtStartUp() throws {
        // A cache hit must not pay for libcurl's dynamic linking: the libraries are dlopen'd on a miss.
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/ldd")
        process.arguments = [Paths.binary]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(text.contains("libc.so"))
        for library in ["libcurl", "libcrypto", "libpng", "libjpeg", "libwebp", "libgif"] {
            #expect(!text.contains(library), "\(library) is linked at start-up")
        }
    }
}
