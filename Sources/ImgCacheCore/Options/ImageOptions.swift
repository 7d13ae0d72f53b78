/// How one image is asked for (SDWebImageOptions), with SDWebImage's bit
/// values, so a mask written for SDWebImage means the same here. The CLI's
/// flags set these bits; `--options` takes names or a mask.
///
/// Bits without a meaning in a command-line tool (they steer UIKit views or iOS
/// background tasks) are accepted and ignored; Docs/OPTIONS.md says why for each.
public struct ImageOptions: OptionSet, Hashable, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Ignore the failed-URL list; success removes the URL from it.
    public static let retryFailed = ImageOptions(rawValue: 1 << 0)
    /// Queue behind normal downloads (prefetch's default).
    public static let lowPriority = ImageOptions(rawValue: 1 << 1)
    /// Do not store on disk: the image only goes to the output.
    public static let cacheMemoryOnly = ImageOptions(rawValue: 1 << 2)
    /// Report progress while the bytes arrive.
    public static let progressiveDownload = ImageOptions(rawValue: 1 << 3)
    /// Revalidate a cached entry with its ETag / Last-Modified.
    public static let refreshCached = ImageOptions(rawValue: 1 << 4)
    /// iOS background task; no meaning here.
    public static let continueInBackground = ImageOptions(rawValue: 1 << 5)
    /// Keep cookies the server sets and send them back.
    public static let handleCookies = ImageOptions(rawValue: 1 << 6)
    /// Do not verify TLS certificates or host names.
    public static let allowInvalidSSLCertificates = ImageOptions(rawValue: 1 << 7)
    /// Jump the queue.
    public static let highPriority = ImageOptions(rawValue: 1 << 8)
    /// Placeholder timing in a view; no meaning here.
    public static let delayPlaceholder = ImageOptions(rawValue: 1 << 9)
    /// Apply transforms to animated images too.
    public static let transformAnimatedImage = ImageOptions(rawValue: 1 << 10)
    /// Setting the image on a view; no meaning here.
    public static let avoidAutoSetImage = ImageOptions(rawValue: 1 << 11)
    /// Downscale images over a pixel limit before storing.
    public static let scaleDownLargeImages = ImageOptions(rawValue: 1 << 12)
    /// Reading data already held in memory; no meaning here.
    public static let queryDataWhenInMemory = ImageOptions(rawValue: 1 << 13)
    /// Synchronous disk queries on the main thread; no meaning here (lookups are synchronous).
    public static let queryDiskSync = ImageOptions(rawValue: 1 << 14)
    /// Never download: a miss is an error.
    public static let fromCacheOnly = ImageOptions(rawValue: 1 << 15)
    /// Skip the cache lookup and always download (the result is still stored).
    public static let fromLoaderOnly = ImageOptions(rawValue: 1 << 16)

    /// Every bit with its SDWebImage name, in bit order.
    public static let named: [(name: String, option: ImageOptions)] = [
        ("RetryFailed", .retryFailed), ("LowPriority", .lowPriority), ("CacheMemoryOnly", .cacheMemoryOnly),
        ("ProgressiveDownload", .progressiveDownload), ("RefreshCached", .refreshCached),
        ("ContinueInBackground", .continueInBackground), ("HandleCookies", .handleCookies),
        ("AllowInvalidSSLCertificates", .allowInvalidSSLCertificates), ("HighPriority", .highPriority),
        ("DelayPlaceholder", .delayPlaceholder), ("TransformAnimatedImage", .transformAnimatedImage),
        ("AvoidAutoSetImage", .avoidAutoSetImage), ("ScaleDownLargeImages", .scaleDownLargeImages),
        ("QueryDataWhenInMemory", .queryDataWhenInMemory), ("QueryDiskSync", .queryDiskSync),
        ("FromCacheOnly", .fromCacheOnly), ("FromLoaderOnly", .fromLoaderOnly),
    ]

    /// Bits that change nothing in a command-line tool.
    public static let withoutMeaning: ImageOptions = [
        .continueInBackground, .delayPlaceholder, .avoidAutoSetImage, .queryDataWhenInMemory, .queryDiskSync,
        // What it asks for is what every transform does here: animations keep their frames where the format can.
        .transformAnimatedImage,
    ]

    /// Every bit imgcache knows.
    public static let known = ImageOptions(named.map(\.option))

    /// Why a `--options` value was refused.
    public enum ParseError: Error, Equatable, Sendable {
        case unknownName(String)
        case unknownBits(UInt32)
        case empty
    }

    /// Reads a comma list whose items are option names (`RetryFailed`,
    /// `retry-failed`, `SDWebImageRetryFailed`; any case) or masks (`17`, `0x11`).
    public init(parsing text: String) throws(ParseError) {
        var options: ImageOptions = []
        let items = text.split(separator: ",", omittingEmptySubsequences: false)
            .map { $0.trimmingSpaces() }
        guard !items.allSatisfy(\.isEmpty) else { throw .empty }
        for item in items where !item.isEmpty {
            if let mask = ImageOptions.mask(item) {
                let unknown = mask & ~ImageOptions.known.rawValue
                guard unknown == 0 else { throw .unknownBits(unknown) }
                options.insert(ImageOptions(rawValue: mask))
            } else if let option = ImageOptions.option(named: item) {
                options.insert(option)
            } else {
                throw .unknownName(item)
            }
        }
        self = options
    }

    /// The bits set, by SDWebImage name, in bit order.
    public var names: [String] {
        ImageOptions.named.filter { contains($0.option) }.map(\.name)
    }

    /// `RetryFailed` as the CLI spells it: `retry-failed`.
    public static func spelled(_ name: String) -> String {
        // The names are ASCII: read as bytes (every run's option table spells them all).
        let letters = Array(name.utf8)
        func isUpper(_ byte: UInt8) -> Bool { byte >= 0x41 && byte <= 0x5A }
        func isLower(_ byte: UInt8) -> Bool { byte >= 0x61 && byte <= 0x7A }
        var result: [UInt8] = []
        result.reserveCapacity(letters.count + 4)
        for (index, letter) in letters.enumerated() {
            // A word starts at a capital after a small letter, or at the last capital of an acronym ("SSLCertificates").
            if isUpper(letter), index > 0,
               isLower(letters[index - 1]) || (index + 1 < letters.count && isLower(letters[index + 1])) {
                result.append(UInt8(ascii: "-"))
            }
            result.append(isUpper(letter) ? letter | 0x20 : letter)
        }
        return String(decoding: result, as: UTF8.self)
    }

    static func option(named item: String) -> ImageOptions? {
        let wanted = normalized(item)
        return named.first { normalized($0.name) == wanted }?.option
    }

    /// Lowercase, without dashes, underscores or the `SDWebImage` prefix.
    static func normalized(_ text: String) -> String {
        var plain = String(text.lowercased().filter { $0 != "-" && $0 != "_" })
        if plain.hasPrefix("sdwebimage") { plain.removeFirst("sdwebimage".count) }
        return plain
    }

    static func mask(_ item: String) -> UInt32? {
        let lower = item.lowercased()
        if lower.hasPrefix("0x") { return UInt32(lower.dropFirst(2), radix: 16) }
        guard lower.first?.isNumber == true else { return nil }
        return UInt32(lower)
    }
}

extension Substring {
    func trimmingSpaces() -> String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
