import ImgCacheCLI
import ImgCacheCore
import Testing

/// fetch's and prefetch's option bits: flags and `--options` fold into one set.
@Suite struct ManagerOptionsParsingTests {
    func invocation(_ words: String) throws(UsageError) -> Invocation {
        try CommandLineParser.parse(words.split(separator: " ").map(String.init))
    }

    func manager(_ words: String) throws -> ManagerArguments {
        guard case .run(_, let command) = try invocation(words),
              let manager = command.arguments(as: FetchArguments.self)?.manager ?? command.arguments(as: PrefetchArguments.self)?.manager else {
            Issue.record("not fetch or prefetch: \(words)")
            throw UsageError.missingCommand
        }
        return manager
    }

    func options(_ words: String) throws -> ImageOptions { try manager(words).settings.options }

    func error(_ words: String) -> UsageError? {
        do { _ = try invocation(words); return nil } catch { return error }
    }

    @Test func eachFlagSetsItsBit() throws {
        let flags: [(String, ImageOptions)] = [
            ("--retry-failed", .retryFailed), ("--refresh", .refreshCached), ("--cache-only", .fromCacheOnly),
            ("--no-cache-read", .fromLoaderOnly), ("--progressive", .progressiveDownload),
            ("-k", .allowInvalidSSLCertificates), ("--cookies jar", .handleCookies),
            ("--priority high", .highPriority), ("--priority low", .lowPriority), ("--memory-only -o f", .cacheMemoryOnly),
        ]
        for (flag, option) in flags { #expect(try options("fetch \(flag) u") == option, "\(flag)") }
        #expect(try options("fetch u") == [])
    }

    @Test func optionsTakesNamesAndMasksAndAddsToFlags() throws {
        #expect(try options("fetch --options retry-failed,RefreshCached u") == [.retryFailed, .refreshCached])
        #expect(try options("fetch --options 0x11 u") == [.retryFailed, .refreshCached])
        #expect(try options("fetch --options 1 --no-cache-read u") == [.retryFailed, .fromLoaderOnly])
        let cookies = try manager("fetch --options handle-cookies,allow-invalid-ssl-certificates u")
        #expect(cookies.downloads.handleCookies && cookies.downloads.cookieJar == nil)
        #expect(cookies.downloads.allowInvalidCertificates)
        // Bits that mean nothing in a CLI are accepted (masks written for SDWebImage still work).
        #expect(try options("fetch --options continue-in-background,0x800 u") == [.continueInBackground, .avoidAutoSetImage])
    }

    @Test func priorityFlagOverridesTheMaskAndPrefetchDefaultsToLow() throws {
        #expect(try options("fetch --options low-priority --priority high u") == .highPriority)
        #expect(try options("fetch --options 0x102 --priority normal u") == [])
        #expect(try manager("prefetch list").settings.priority == .low)
        #expect(try manager("prefetch --priority normal list").settings.priority == .normal)
        #expect(try manager("prefetch --options high-priority").settings.priority == .high)
    }

    @Test func contradictionsAreUsageErrors() throws {
        #expect(error("fetch --cache-only --no-cache-read u")
            == .conflictingOptions("--cache-only", "--no-cache-read", reason: "one never downloads, the other always does"))
        #expect(error("fetch --options 0x18000 u")
            == .conflictingOptions("--cache-only", "--no-cache-read", reason: "one never downloads, the other always does"))
        #expect(error("fetch --cache-only --refresh u") == .conflictingOptions("--cache-only", "--refresh", reason: "a refresh asks the server"))
        #expect(error("fetch --memory-only u")
            == .requires("--memory-only", "--output (the image is not stored, so it has no path to print)"))
        #expect(error("prefetch --options cache-memory-only")
            == .conflictingOptions("CacheMemoryOnly", "prefetch", reason: "prefetch only stores images"))
        #expect(try manager("fetch --thumbnail 8x8 --options 0x400 u").settings.variants.first?.transformsAnimations == true)
    }

    @Test func badOptionValuesSayWhy() {
        #expect(error("fetch --options retry-faild u")
            == .invalidValue(option: "--options", value: "retry-faild", reason: "unknown option 'retry-faild' (did you mean 'retry-failed'?)"))
        #expect(error("fetch --options 0x40000 u")
            == .invalidValue(option: "--options", value: "0x40000",
                             reason: "no option has bits 0x40000; the highest is FromLoaderOnly, 0x10000"))
        #expect(error("fetch --options , u") == .invalidValue(option: "--options", value: ",", reason: "expected option names or a mask"))
        guard case .invalidValue(option: "--failed-ttl", value: "soon", _)? = error("fetch --failed-ttl soon u") else {
            Issue.record("a bad --failed-ttl was accepted")
            return
        }
    }

    @Test func severalSizesAndFormatsAreEveryCombinationSizesFirst() throws {
        // Spaces after the commas are taken as a shell user types them.
        guard case .run(_, let command) = try CommandLineParser.parse(["fetch", "--thumbnail", "320x, x240", "--format", "webp, JPEG", "u"]),
              let variants = command.arguments(as: FetchArguments.self)?.manager.settings.variants else {
            Issue.record("not a fetch")
            return
        }
        #expect(variants.map { "\($0.thumbnail?.description ?? "-") \($0.format?.rawValue ?? "-")" }
            == ["320x webp", "320x jpeg", "x240 webp", "x240 jpeg"])
    }

    /// Given several times, --thumbnail, --format and --quality add up, as their comma lists do.
    @Test func repeatedTransformOptionsAddUp() throws {
        let variants = try manager("fetch --thumbnail 64x --thumbnail 128x --format avif --format webp --quality avif=40 --quality webp=60 u")
            .settings.variants
        #expect(variants.map { "\($0.thumbnail?.description ?? "-") \($0.format?.rawValue ?? "-") \($0.quality)" }
            == ["64x avif 40", "64x webp 60", "128x avif 40", "128x webp 60"])
        // A size or format given twice is one variant; a plain quality in a list is every other format's, as given apart.
        let once = try manager("fetch --thumbnail 64x --thumbnail 64x,64x --format webp,webp --format jpg,jpeg u").settings.variants
        #expect(once.map { "\($0.thumbnail?.description ?? "-") \($0.format?.rawValue ?? "-")" } == ["64x webp", "64x jpeg"])
        for words in ["--quality 50,webp=90", "--quality 50 --quality webp=90", "--quality webp=90,50"] {
            let variants = try manager("fetch --thumbnail 8x --format avif,webp " + words + " u").settings.variants
            #expect(variants.map(\.quality) == [50, 90], "\(words)")
        }
    }

    @Test func transformsAreReadAndNeedEachOther() throws {
        let thumbnail = try #require(try manager("fetch --thumbnail 256x128 --format webp --quality 70 u").settings.variants.first)
        #expect(thumbnail.thumbnail == ImageTransform.BoxSize(width: 256, height: 128))
        #expect(thumbnail.format == .webp && thumbnail.quality == 70 && thumbnail.scaleDownLimit == nil)
        let scaled = try manager("prefetch --scale-down")
        #expect(scaled.settings.variants.first?.scaleDownLimit == ImageTransform.defaultScaleDownLimit)
        #expect(scaled.settings.options.contains(.scaleDownLargeImages))
        #expect(try manager("fetch --scale-down=20M u").settings.variants.first?.scaleDownLimit == PixelLimit(pixels: 20_000_000))
        #expect(try manager("fetch --options 0x1000 u").settings.variants.first?.scaleDownLimit == ImageTransform.defaultScaleDownLimit)
        #expect(try manager("fetch u").settings.variants.first == nil)
        // --format alone converts, at the image's own size.
        #expect(try manager("fetch --format png u").settings.variants.first == ImageTransform(format: .png))
        // A thumbnail takes the format its output file's name asks for; a name it cannot write is refused.
        #expect(try manager("fetch --thumbnail 8x8 -o t.webp u").settings.variants.first?.format == .webp)
        #expect(try manager("fetch --thumbnail 8x8 -o t.JPG u").settings.variants.first?.format == .jpeg)
        #expect(try manager("fetch --thumbnail 8x8 -o t.out u").settings.variants.first?.format == nil)
        #expect(try manager("fetch --thumbnail 8x8 -o t.gif u").settings.variants.first?.format == .gif)
        // A format imgcache reads but does not write: said, with the names it writes.
        #expect(error("fetch --thumbnail 8x8 -o t.tif u") == .invalidValue(option: "--output", value: "t.tif",
            reason: "a transformed image is written as JPEG, PNG, WebP, GIF, AVIF or JPEG XL; name it .jpg, .png, .webp, .gif, .avif or .jxl"))
        #expect(error("fetch --thumbnail 8x8 --format png -o t.webp u")
            == .conflictingOptions("--output t.webp", "--format png", reason: "the name asks for WebP"))
        #expect(error("fetch --quality 50 u") == .requires("--quality", "--thumbnail, --scale-down or --format"))
        #expect(error("fetch --thumbnail 0x10 u")
            == .invalidValue(option: "--thumbnail", value: "0x10", reason: "expected WIDTHxHEIGHT, WIDTHx or xHEIGHT (each from 1 to 65535), comma-separated"))
        #expect(error("fetch --thumbnail 8x8 --format tiff u")
            == .invalidValue(option: "--format", value: "tiff", reason: "expected jpeg, png, webp, gif, avif, jxl, comma-separated"))
        #expect(error("fetch --refresh=yes u") == .invalidValue(option: "--refresh", value: "yes", reason: "expected --refresh or --refresh=stale"))
        // A number with an exponent is taken nowhere: a duration says why, a rate too.
        #expect(error("fetch --deadline 1e9 u") == .invalidValue(option: "--deadline", value: "1e9",
                                                                reason: "exponents are not taken: write the number out, as 1000000000"))
        #expect(error("prefetch --rate 1e9/s") == .invalidValue(option: "--rate", value: "1e9/s",
                                                               reason: "exponents are not taken: write the number out (1000000000/s); from 1/h to 100000/s"))
        #expect(error("prefetch --rate 1.5e3/s")?.message.contains("exponents are not taken: write the number out (1500/s)") == true)
        #expect(error("fetch --max-size 2e6 u")?.message.contains("write the number out, as 2000000") == true)
        #expect(error("prefetch --rate many/s") == .invalidValue(option: "--rate", value: "many/s",
                                                                reason: "expected a positive number of requests, as 5/s, 0.5/s or 30/m (from 1/h to 100000/s)"))
        #expect(try manager("fetch --refresh=stale u").settings.refreshesOnlyStale)
        #expect(try manager("fetch --thumbnail 8x8 --format jpeg --background #123 u").settings.variants.first?.background
            == RGBColor(red: 0x11, green: 0x22, blue: 0x33))
        #expect(error("fetch --background white u") == .requires("--background", "--thumbnail, --scale-down or --format"))
    }

    /// A quality per format, or one for all; unsaid, each format's default (AVIF 70, the others 85).
    @Test func qualityIsGivenPerFormatOrForAll() throws {
        func qualities(_ words: String) throws -> [String: Int] {
            Dictionary(try manager(words).settings.variants.map { ($0.format?.rawValue ?? "-", $0.quality) }) { first, _ in first }
        }
        #expect(try qualities("fetch --thumbnail 8x --format avif,webp,jpeg u") == ["avif": 70, "webp": 85, "jpeg": 85])
        #expect(try qualities("fetch --thumbnail 8x --format avif,webp,jpeg --quality avif=60,webp=80 u") == ["avif": 60, "webp": 80, "jpeg": 85])
        #expect(try qualities("fetch --thumbnail 8x --format avif,webp --quality 50 u") == ["avif": 50, "webp": 50])
        #expect(try qualities("fetch --thumbnail 8x --format jpeg --quality JPG=77 u") == ["jpeg": 77])
        #expect(error("fetch --thumbnail 8x --format avif --quality png=50 u")?.message.contains("expected N, or FORMAT=N") == true)
        #expect(error("fetch --thumbnail 8x --format avif --quality avif=0 u") != nil)
    }

    @Test func maxPixelsTakesCountsAndSizes() throws {
        #expect(try manager("fetch u").settings.maximumPixels == PixelLimit(pixels: 100_000_000))
        #expect(try manager("fetch --max-pixels 2.5M u").settings.maximumPixels == PixelLimit(pixels: 2_500_000))
        #expect(try manager("prefetch --max-pixels 8000x8000").settings.maximumPixels == PixelLimit(pixels: 64_000_000))
        #expect(try manager("fetch --max-pixels 40k u").settings.maximumPixels == PixelLimit(pixels: 40_000))
        for bad in ["0", "0.4", "-5", "lots", "10x", "x10", "0x10", "2e30"] {
            guard case .invalidValue(option: "--max-pixels", value: bad, _)? = error("fetch --max-pixels \(bad) u") else {
                Issue.record("--max-pixels \(bad) was accepted")
                continue
            }
        }
    }

    @Test func failedTTLIsReadForFetchAndClean() throws {
        #expect(try manager("fetch --failed-ttl 2h u").settings.failedTTL == .seconds(7200))
        #expect(try manager("prefetch --failed-ttl never").settings.failedTTL == .never)
        #expect(try manager("fetch u").settings.failedTTL == nil)
        guard case .run(_, let command) = try invocation("clean --failed-ttl 3d --remember"),
              let clean = command.arguments(as: CleanArguments.self) else {
            Issue.record("not a clean")
            return
        }
        #expect(clean.failedTTL == .seconds(3 * 86_400) && clean.remember)
    }

    @Test func everyMaintenanceCommandRefusesAllNamespacesWithANamespace() {
        for command in ["cache-info", "clean", "clear"] {
            #expect(error("-n x \(command) --all-namespaces")
                == .conflictingOptions("--all-namespaces", "--namespace", reason: "choose one"), "\(command)")
        }
    }

    @Test func prefetchTakesListsInTurn() throws {
        func prefetch(_ words: String) throws -> PrefetchArguments? {
            guard case .run(_, let command) = try invocation(words) else { return nil }
            return command.arguments(as: PrefetchArguments.self)
        }
        guard let fromStdin = try prefetch("prefetch"), let dash = try prefetch("prefetch -"),
              let file = try prefetch("prefetch --no-progress urls.txt") else {
            Issue.record("not a prefetch")
            return
        }
        #expect(fromStdin.input == nil && fromStdin.showProgress)
        #expect(dash.input == "-")
        #expect(file.input == "urls.txt" && !file.showProgress)
        // Several lists are read in turn as one; standard input once.
        let several = try prefetch("prefetch a.csv b.csv")
        #expect(several?.input == "a.csv" && several?.moreInputs == ["b.csv"])
        #expect(error("prefetch - -") == .invalidValue(option: "FILE", value: "-", reason: "standard input can be read once"))
    }
}
