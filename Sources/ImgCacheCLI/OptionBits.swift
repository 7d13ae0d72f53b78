import ImgCacheCore

/// What each SDWebImage option bit means in imgcache and which flag sets it;
/// the man page's OPTION BITS section and Docs/OPTIONS.md are held to it.
public enum OptionBits {
    public struct Entry: Sendable {
        public let name: String
        public let option: ImageOptions
        /// The flag that sets it, if any ("--retry-failed").
        public let flag: String?
        public let meaning: String
    }

    public static let entries: [Entry] = ImageOptions.named.map { name, option in
        let (flag, meaning) = describe(option)
        return Entry(name: name, option: option, flag: flag, meaning: meaning)
    }

    private static func describe(_ option: ImageOptions) -> (String?, String) {
        switch option {
        case .retryFailed: return ("--retry-failed", "Ignore the failed-URL list; a success takes the URL off it.")
        case .lowPriority: return ("--priority low", "Queue behind normal downloads of the same run (prefetch's default).")
        case .cacheMemoryOnly: return ("--memory-only", "Do not store: the image goes to --output only (fetch; needs -o).")
        case .progressiveDownload:
            return ("--progressive", "Show the bytes received while they arrive (a status line on a terminal, else -v lines).")
        case .refreshCached:
            return ("--refresh", "Revalidate a cached entry with its ETag / Last-Modified; a 304 keeps the file, a 200 replaces it (--refresh=stale: only entries whose freshness ran out).")
        case .handleCookies:
            return ("--cookies FILE", "Keep cookies the server sets and send them back; with --cookies they are read from and saved to FILE.")
        case .allowInvalidSSLCertificates: return ("-k", "Do not verify TLS certificates or host names (prints a warning).")
        case .highPriority: return ("--priority high", "Queue ahead of normal downloads of the same run.")
        case .transformAnimatedImage:
            let animated = CodecRegistry.animatedFormats, still = CodecRegistry.writableFormats.filter { !animated.contains($0) }
            return ("--transform-animated", "No effect: a thumbnail or shrunk copy of an animation always keeps every frame when written as "
                + "\(CodecRegistry.spelled(animated)) (and is its first frame as \(CodecRegistry.spelled(still)), which imgcache writes still).")
        case .scaleDownLargeImages:
            return ("--scale-down", "Store images over 15.7 megapixels (or --scale-down=PIXELS) shrunk to fit, under a key of their own.")
        case .fromCacheOnly: return ("--cache-only", "Never download: a URL that is not cached is an error.")
        case .fromLoaderOnly: return ("--no-cache-read", "Skip the cache lookup and download again; the image is still stored.")
        case .continueInBackground: return (nil, "No effect: an iOS background task; a command runs until it ends.")
        case .delayPlaceholder: return (nil, "No effect: placeholder images belong to views.")
        case .avoidAutoSetImage: return (nil, "No effect: there is no view to set an image on.")
        case .queryDataWhenInMemory: return (nil, "No effect: the answer is always the file, read from disk.")
        case .queryDiskSync: return (nil, "No effect: lookups are always synchronous.")
        default: return (nil, "")
        }
    }

    /// The table Docs/OPTIONS.md shows (a test keeps the two equal).
    public static func markdownTable() -> String {
        var lines = ["| Bit | SDWebImage option | Mask | Flag | In imgcache |", "|---|---|---|---|---|"]
        for entry in entries {
            let bit = entry.option.rawValue.trailingZeroBitCount
            let flag = entry.flag.map { "`\($0)`" } ?? "—"
            lines.append("| 1<<\(bit) | \(entry.name) | `\(hex(entry.option))` | \(flag) | \(entry.meaning) |")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// `0x8000`.
    public static func hex(_ option: ImageOptions) -> String { "0x" + String(option.rawValue, radix: 16) }
}
