import ImgCacheCore

/// What fetch and prefetch share: the manager's options (option bits, transforms,
/// remote stores) and the downloads' options.
extension ParsedOptions {
    func managerArguments(defaultPriority: DownloadPriority) throws(UsageError) -> ManagerArguments {
        var manager = ManagerArguments()
        var options = try imageOptions()
        let flags: [(OptionName, ImageOptions)] = [
            (.refresh, .refreshCached), (.cacheOnly, .fromCacheOnly), (.noCacheRead, .fromLoaderOnly),
            (.retryFailed, .retryFailed), (.memoryOnly, .cacheMemoryOnly), (.progressive, .progressiveDownload),
            (.insecure, .allowInvalidSSLCertificates), (.cookies, .handleCookies),
        ]
        for (flag, option) in flags where has(flag) { options.insert(option) }
        // Choices were checked against the table (`checkAgainstTable`).
        if let priority = last(.priority).flatMap(DownloadPriority.init(name:)) {
            options.subtract([.lowPriority, .highPriority])
            switch priority {
            case .high: options.insert(.highPriority)
            case .low: options.insert(.lowPriority)
            case .normal: break
            }
        } else if defaultPriority == .low, options.isDisjoint(with: [.lowPriority, .highPriority]) {
            options.insert(.lowPriority)
        }
        if let text = last(.refresh), !text.isEmpty {
            guard text == "stale" else { throw .invalidValue(option: "--refresh", value: text, reason: "expected --refresh or --refresh=stale") }
            manager.settings.refreshesOnlyStale = true
        }
        try checkCombination(options)
        manager.settings.variants = try variants(&options)
        manager.settings.keepsOriginal = !has(.noOriginal)
        manager.settings.keepsSVG = has(.keepSvg)
        if has(.placeholders) || has(.placeholder) {
            if has(.noOriginal), manager.settings.variants.isEmpty {
                throw .requires("--no-original", "--thumbnail, --scale-down or --format (a placeholder is not the image)")
            }
            if options.contains(.cacheMemoryOnly) {
                throw .conflictingOptions("--placeholders", "--memory-only", reason: "placeholders are kept in the cache, beside the image")
            }
            manager.settings.variants.append(.placeholder)
        }
        manager.settings.options = options
        manager.downloads.allowInvalidCertificates = options.contains(.allowInvalidSSLCertificates)
        manager.downloads.handleCookies = options.contains(.handleCookies)
        if has(.failedTtl) { manager.settings.failedTTL = try failedTTL() }
        if let verification = last(.verify).flatMap(FetchSettings.Verification.init(rawValue:)) {
            manager.settings.verification = verification
        }
        if let text = last(.maxPixels) {
            do { manager.settings.maximumPixels = try PixelLimit(parsing: text) } catch {
                throw .invalidValue(option: "--max-pixels", value: text, reason: error.reason)
            }
        }
        (manager.decodeSeconds, manager.decodeMemory) = try decodeLimits()
        if let text = last(.keyFilter) {
            guard let filter = CacheKeyFilter(parsing: text) else {
                throw .invalidValue(option: "--key-filter", value: text,
                                    reason: "expected strip-query, keep-query=NAME[,NAME...], drop-query=NAME[,NAME...] or none")
            }
            manager.settings.keyFilter = filter
        }
        for path in values[.readOnlyPath] ?? [] {
            guard !path.isEmpty else { throw .invalidValue(option: "--read-only-path", value: path, reason: "the path is empty") }
            manager.readOnlyPaths.append(path)
        }
        if let texts = values[.remote] {
            manager.remotes = try Self.remotes(texts, option: "--remote")
        }
        manager.settings.remoteReshare = has(.remoteReshare)
        if has(.remoteReshare), has(.noOriginal) {
            // What is shared is the image as served, and --no-original keeps none to share from the cache.
            throw .conflictingOptions("--remote-reshare", "--no-original",
                                      reason: "a hit is shared from its cached original, which --no-original does not keep")
        }
        manager.remember = has(.remember)
        if manager.remember {
            guard let remotes = manager.remotes else { throw .requires("--remember", "--remote") }
            if let secret = remotes.first(where: \.hasCredentialsInURL) {
                throw .invalidValue(option: "--remote", value: secret.description,
                                    reason: "a remembered remote cannot hold a password; use password-env= or user-env=")
            }
        }
        try readDownloadOptions(settings: &manager.settings, configuration: &manager.downloads)
        manager.asksPassword = last(.user).map { !$0.isEmpty && !$0.contains(":") } ?? false
        return manager
    }

    /// `--options`: names or masks, checked.
    func imageOptions() throws(UsageError) -> ImageOptions {
        guard let text = last(.options) else { return [] }
        do {
            return try ImageOptions(parsing: text)
        } catch {
            switch error {
            case .empty:
                throw .invalidValue(option: "--options", value: text, reason: "expected option names or a mask")
            case .unknownName(let name):
                let typed = name.contains(where: \.isUppercase) ? ImageOptions.spelled(name) : name.lowercased()
                let hint = Suggestion.closest(to: typed, among: ImageOptions.named.map { ImageOptions.spelled($0.name) })
                throw .invalidValue(option: "--options", value: text,
                                    reason: "unknown option '\(name)'" + (hint.map { " (did you mean '\($0)'?)" } ?? ""))
            case .unknownBits(let bits):
                throw .invalidValue(option: "--options", value: text,
                                    reason: "no option has bits 0x\(String(bits, radix: 16)); the highest is FromLoaderOnly, 0x10000")
            }
        }
    }

    /// `--thumbnail`, `--scale-down[=PIXELS]` (or the ScaleDownLargeImages bit), `--format`, `--quality`,
    /// `--fit`, `--upscale`, `--background`: every variant asked for, sizes first then formats
    /// (`--thumbnail 320x,640x --format webp,avif`: four), in the order given.
    func variants(_ options: inout ImageOptions) throws(UsageError) -> [ImageTransform] {
        var base = ImageTransform()
        var sizes: [ImageTransform.BoxSize?] = [nil]
        // Given several times, --thumbnail and --format add up, as their comma lists do.
        if let text = joined(.thumbnail) {
            sizes = []
            for item in text.split(separator: ",", omittingEmptySubsequences: false) {
                guard let box = ImageTransform.BoxSize(parsing: String(item.trimmingWhitespace)) else {
                    throw .invalidValue(option: "--thumbnail", value: text,
                                        reason: "expected WIDTHxHEIGHT, WIDTHx or xHEIGHT (each from 1 to 65535), comma-separated")
                }
                // A size given twice is one variant (as `--thumbnail 64x,64x` asks for one file).
                if !sizes.contains(box) { sizes.append(box) }
            }
        }
        if let text = last(.scaleDown) {
            options.insert(.scaleDownLargeImages)
            if !text.isEmpty {
                do { base.scaleDownLimit = try PixelLimit(parsing: text) } catch {
                    throw .invalidValue(option: "--scale-down", value: text, reason: error.reason)
                }
            }
        }
        if options.contains(.scaleDownLargeImages), base.scaleDownLimit == nil {
            base.scaleDownLimit = ImageTransform.defaultScaleDownLimit
        }
        if has(.transformAnimated) { options.insert(.transformAnimatedImage) }
        base.transformsAnimations = options.contains(.transformAnimatedImage)
        var formats: [ImageFormat?] = [nil]
        if let text = joined(.format) {
            formats = []
            for item in text.split(separator: ",", omittingEmptySubsequences: false) {
                // A format's name, or an extension that names it (jpg, as -o photo.jpg is taken).
                let name = String(item.trimmingWhitespace).lowercased()
                guard let format = ImageFormat(rawValue: name) ?? ImageFormat(fileExtension: name),
                      ImageEncoder.writableFormats.contains(format) else {
                    throw .invalidValue(option: "--format", value: text,
                                        reason: "expected \(CodecRegistry.writableFormats.map(\.rawValue).joined(separator: ", ")), comma-separated")
                }
                if !formats.contains(format) { formats.append(format) }
            }
        }
        // --format alone converts: the image is stored in that format, at its size.
        let transforms = sizes != [nil] || base.scaleDownLimit != nil || formats != [nil]
        if let text = last(.background) {
            do { base.background = try RGBColor(parsing: text) } catch {
                throw .invalidValue(option: "--background", value: text, reason: error.reason)
            }
            base.padding = base.background
            guard transforms else { throw .requires("--background", "--thumbnail, --scale-down or --format") }
        }
        // One quality for every format, or one per format (`avif=55,webp=80`); the others at their defaults.
        var qualities: [ImageFormat: Int] = [:]
        var givenQuality: Int?
        // Given several times, each says its part (`--quality avif=40 --quality webp=60`; a plain N, the last).
        // A comma list is the same as the option given once per item: a plain N among FORMAT=N pairs (`50,webp=90`) is every other format's.
        for text in values[.quality] ?? [] {
            for pair in text.split(separator: ",", omittingEmptySubsequences: false) {
                guard pair.contains("=") else {
                    givenQuality = try integer(String(pair), option: "--quality", in: 1...100)
                    continue
                }
                let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2, let format = ImageFormat(rawValue: parts[0].lowercased()) ?? (parts[0].lowercased() == "jpg" ? .jpeg : nil),
                      CodecRegistry.codec(for: format).capabilities.contains(.quality) else {
                    throw .invalidValue(option: "--quality", value: text,
                                        reason: "expected N, or FORMAT=N for each of " + CodecRegistry.spelled(CodecRegistry.writableFormats.filter {
                                            CodecRegistry.codec(for: $0).capabilities.contains(.quality) }) + " (avif=60,webp=80)")
                }
                qualities[format] = try integer(parts[1], option: "--quality", in: 1...100)
            }
            guard transforms else { throw .requires("--quality", "--thumbnail, --scale-down or --format") }
        }
        if let text = last(.fit) {
            // The value was checked against the table's choices.
            base.fit = ImageTransform.Fit(rawValue: text) ?? .inside
            guard sizes != [nil] else { throw .requires("--fit", "--thumbnail") }
            if base.fit != .inside, let partial = sizes.first(where: { !($0?.isComplete ?? false) }) {
                throw .invalidValue(option: "--thumbnail", value: partial?.description ?? "",
                                    reason: "--fit \(text) makes exactly WIDTHxHEIGHT: both are needed")
            }
        }
        if has(.upscale) {
            base.upscale = true
            guard sizes != [nil] else { throw .requires("--upscale", "--thumbnail") }
        }
        if has(.noOriginal), !transforms { throw .requires("--no-original", "--thumbnail, --scale-down or --format") }
        guard transforms else { return [] }
        var variants: [ImageTransform] = []
        for size in sizes {
            for format in formats {
                var variant = base
                variant.thumbnail = size
                variant.format = format
                variant.quality = format.flatMap { qualities[$0] } ?? givenQuality ?? ImageEncoder.Settings.defaultQuality(for: format)
                variants.append(variant)
            }
        }
        return variants
    }

    /// A transform writes the format `--output`'s name asks for when no
    /// --format says otherwise; a name that asks for another format than
    /// --format's, or one imgcache cannot write, is refused.
    func fitTransform(_ transform: inout ImageTransform, toOutput output: String) throws(UsageError) {
        guard output != "-", let named = ImageFormat(namedBy: output) else { return }
        if let format = transform.format {
            guard format == named else {
                throw .conflictingOptions("--output \(output)", "--format \(format.rawValue)",
                                          reason: "the name asks for \(named.displayName)")
            }
            return
        }
        guard ImageEncoder.writableFormats.contains(named) else {
            throw .invalidValue(option: "--output", value: output,
                                reason: "a transformed image is written as \(CodecRegistry.spelled(CodecRegistry.writableFormats)); "
                                    + "name it \(CodecRegistry.spelled(CodecRegistry.writableFormats, extensions: true))")
        }
        transform.format = named
    }

    /// Refuses options that contradict each other, or need what this version does not have.
    func checkCombination(_ options: ImageOptions) throws(UsageError) {
        if options.contains(.fromCacheOnly) && options.contains(.fromLoaderOnly) {
            throw .conflictingOptions("--cache-only", "--no-cache-read", reason: "one never downloads, the other always does")
        }
        if options.contains(.fromCacheOnly) && options.contains(.refreshCached) {
            throw .conflictingOptions("--cache-only", "--refresh", reason: "a refresh asks the server")
        }
        if options.contains(.fromLoaderOnly) && options.contains(.refreshCached) {
            throw .conflictingOptions("--no-cache-read", "--refresh", reason: "a refresh revalidates the cached copy that --no-cache-read ignores")
        }

    }

    /// `--failed-ttl AGE|never`.
    /// `--max-size` of clean and config, checked.
    func readDownloadOptions(settings: inout FetchSettings, configuration: inout DownloadConfiguration) throws(UsageError) {
        if let text = last(.concurrency) {
            configuration.maximumConcurrentDownloads = try integer(text, option: "--concurrency", in: 1...CommandLineParser.maximumConcurrency)
        }
        if let text = last(.timeout) { settings.timeout = try seconds(text, option: "--timeout") }
        if let text = last(.connectTimeout) { settings.connectTimeout = try seconds(text, option: "--connect-timeout") }
        if let text = last(.perHost) {
            configuration.perHostConcurrency = try integer(text, option: "--per-host", in: 1...CommandLineParser.maximumConcurrency)
        }
        if let text = last(.rate) {
            do throws(ValueError) { configuration.perHostRate = try ParsedOptions.rate(text) } catch {
                throw .invalidValue(option: "--rate", value: text, reason: error.reason)
            }
        }
        if let text = last(.maxTime) { settings.maximumTime = try seconds(text, option: "--max-time") }
        if let text = last(.deadline) { settings.deadline = try seconds(text, option: "--deadline") }
        if has(.netrc) { configuration.netrc = .home }
        if let path = last(.netrcFile) {
            guard !path.isEmpty else { throw .invalidValue(option: "--netrc-file", value: path, reason: "the path is empty") }
            configuration.netrc = .file(path)
        }
        settings.usesNetrc = configuration.netrc != nil
        // -x "": no proxy at all, the environment's neither (as curl takes it).
        if let proxy = last(.proxy), proxy.isEmpty {
            configuration.proxy = ""
        } else if let proxy = last(.proxy) {
            let schemes = ["http://", "https://", "socks4://", "socks4a://", "socks5://", "socks5h://"]
            guard schemes.contains(where: { proxy.lowercased().hasPrefix($0) }) || !proxy.contains("://") else {
                throw .invalidValue(option: "--proxy", value: proxy, reason: "expected http://, https://, socks4://, socks5:// or socks5h://")
            }
            guard !proxy.isEmpty, !proxy.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) else {
                throw .invalidValue(option: "--proxy", value: UsageError.visible(proxy), reason: "expected a proxy URL without spaces")
            }
            configuration.proxy = proxy
        }
        if let text = last(.retries) { settings.retries = try integer(text, option: "--retries", in: 0...100) }
        if let text = last(.maxRedirects) { settings.maximumRedirects = try integer(text, option: "--max-redirects", in: 0...100) }
        if let order = last(.order).flatMap(DownloadOrder.init(rawValue:)) { configuration.order = order }
        for line in values[.header] ?? [] {
            do {
                settings.headers.append(try HTTPHeader(parsing: line))
            } catch {
                throw .invalidValue(option: "--header", value: line, reason: error.reason)
            }
        }
        if let given = last(.accept) {
            // Sent without the space around it (libcurl trims it), so keyed without it too.
            let accept = Substring(given).trimmingWhitespace
            if let header = settings.headers.first(where: { $0.name.lowercased() == "accept" }) {
                throw .conflictingOptions("--accept", "--header '\(header.name): \(header.value)'", reason: "both set Accept")
            }
            guard !accept.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                throw .invalidValue(option: "--accept", value: UsageError.visible(accept), reason: "control characters are not allowed")
            }
            settings.headers.append(HTTPHeader(name: "Accept", value: accept))
        }
        if let text = last(.user) {
            // The value is a secret: the message never repeats it.
            guard let credentials = Credentials(parsing: text) ?? (text.isEmpty ? nil : Credentials(user: text, password: "")) else {
                throw .invalidValue(option: "--user", value: "…", reason: "expected USER:PASSWORD, or USER to be asked the password")
            }
            guard !text.utf8.contains(where: { $0 < 0x20 || $0 == 0x7f }) else {
                throw .invalidValue(option: "--user", value: "…", reason: "control characters are not allowed")
            }
            settings.credentials = credentials
        }
        if let path = last(.cacert) {
            guard !path.isEmpty else { throw .invalidValue(option: "--cacert", value: path, reason: "the path is empty") }
            configuration.certificateAuthorities.bundle = path
        }
        if let path = last(.capath) {
            guard !path.isEmpty else { throw .invalidValue(option: "--capath", value: path, reason: "the path is empty") }
            configuration.certificateAuthorities.folder = path
        }
        if let path = last(.cookies) {
            guard !path.isEmpty else { throw .invalidValue(option: "--cookies", value: path, reason: "the path is empty") }
            configuration.cookieJar = path
        }
        // `none` lifts the default (FetchSettings.defaultMaximumBytes).
        if let text = last(.maxSize), text.lowercased() == "none" {
            settings.maximumBytes = nil
        } else if let text = last(.maxSize) {
            let size: ByteSize
            do { size = try ByteSize(parsing: text) } catch {
                throw .invalidValue(option: "--max-size", value: text, reason: error.reason)
            }
            guard size.bytes > 0 else { throw .invalidValue(option: "--max-size", value: text, reason: "must be more than 0") }
            settings.maximumBytes = size.bytes
        }
    }

}

extension ParsedOptions {
    /// `--max-decode-time` and `--max-decode-memory` as given (fetch, prefetch, export and config read them).
    func decodeLimits() throws(UsageError) -> (seconds: Double?, memory: Int?) {
        var limits: (seconds: Double?, memory: Int?) = (nil, nil)
        if let text = last(.maxDecodeTime) {
            do { limits.seconds = try DecodeLimits.seconds(parsing: text) } catch {
                throw .invalidValue(option: "--max-decode-time", value: text, reason: error.reason)
            }
        }
        if let text = last(.maxDecodeMemory) {
            do { limits.memory = try DecodeLimits.memory(parsing: text) } catch {
                throw .invalidValue(option: "--max-decode-memory", value: text, reason: error.reason)
            }
        }
        return limits
    }

    /// `--input-format` and `--url-column`: how a list is read (what is not given, its file's name says).
    func listFormat() throws(UsageError) -> ListFormat.Choice {
        let column = last(.urlColumn)
        if let column, column.isEmpty || column.contains(where: { $0 == "\n" || $0 == "\r" }) {
            throw .invalidValue(option: "--url-column", value: column, reason: "name a column")
        }
        var kind: ListFormat.Kind?
        if let named = last(.inputFormat) {
            guard let given = ListFormat.Kind(rawValue: named) else {
                throw .invalidValue(option: "--input-format", value: named, reason: "it is lines, csv, tsv or jsonl")
            }
            if given == .lines, column != nil {
                throw .conflictingOptions("--url-column", "--input-format lines", reason: "a list of lines has no columns")
            }
            kind = given
        }
        return ListFormat.Choice(kind: kind, urlColumn: column)
    }
}

extension ParsedOptions {
    /// `N/s`, `N/m`, `N/h` or `N` (a second): requests a second.
    static func rate(_ text: String) throws(ValueError) -> Double {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        let per: Double
        switch parts.count == 2 ? parts[1].lowercased() : "s" {
        case "s", "sec", "second": per = 1
        case "m", "min", "minute": per = 60
        case "h", "hour": per = 3600
        default: throw ValueError("expected N/s, N/m or N/h")
        }
        // A plain decimal, as every quantity imgcache takes: no exponent, no hex, no inf.
        let range = "from 1/h to 100000/s"
        if parts[0].contains(where: { $0 == "e" || $0 == "E" }), QuantityText.plainDecimal(parts[0]) == nil, let meant = Double(parts[0]) {
            let spelled = meant.isFinite && meant < 1e18 && meant == meant.rounded() ? String(Int64(meant)) : "the number in digits"
            throw ValueError("exponents are not taken: write the number out (\(spelled)/\(parts.count == 2 ? String(parts[1]) : "s")); \(range)")
        }
        guard parts.count <= 2, let count = QuantityText.plainDecimal(parts[0]), count.isFinite, count > 0 else {
            throw ValueError("expected a positive number of requests, as 5/s, 0.5/s or 30/m (\(range))")
        }
        let rate = count / per
        guard rate >= 1.0 / 3600, rate <= 100_000 else { throw ValueError("expected \(range)") }
        return rate
    }
}
