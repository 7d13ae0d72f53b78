import ImgCacheCore

/// The format a request without one gets: the best its `Accept` allows of AVIF and WebP, else
/// the source's own. An animation keeps its frames: WebP when allowed, else its own format.
public enum AcceptNegotiation {
    /// The media types `accept` allows with a q above 0 (`image/*` and `*/*` allow any), lower case.
    static func allowed(_ accept: String) -> (types: Set<String>, anyImage: Bool) {
        var types: Set<String> = []
        var refused: Set<String> = []
        var anyImage = false
        for item in accept.lowercased().split(separator: ",") {
            let parts = item.split(separator: ";")
            guard let type = parts.first?.trimmingCharacters(), !type.isEmpty else { continue }
            var quality = 1.0
            for parameter in parts.dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1)
                if pair.count == 2, pair[0].trimmingCharacters() == "q" { quality = Double(pair[1].trimmingCharacters()) ?? 1 }
            }
            if quality <= 0 { refused.insert(type); continue }
            if type == "image/*" || type == "*/*" { anyImage = true } else { types.insert(type) }
        }
        return (types.subtracting(refused), anyImage && refused.isEmpty)
    }

    /// The format to write for a request with `accept` (nil header: the source's own), of a source
    /// of `source`'s format, animated or not; nil: the source's own.
    /// Whether this machine can write AVIF: libavif loads (checked once).
    static let avifLoads = SystemLibraries.loads("libavif")

    public static func format(accept: String?, source: ImageFormat?, animated: Bool) -> ImageFormat? {
        guard let accept, !accept.isEmpty else { return nil }
        let (types, _) = allowed(accept)
        // Only formats named: `image/*` says nothing of what a client decodes best.
        if animated {
            if source == .webp || source == .gif { return types.contains("image/webp") && source != .webp ? .webp : nil }
            return nil
        }
        // AVIF only where libavif loads here (it is a recommended package, not a dependency).
        if types.contains("image/avif"), ImageEncoder.writableFormats.contains(.avif), avifLoads { return source == .avif ? nil : .avif }
        if types.contains("image/webp") { return source == .webp ? nil : .webp }
        return nil
    }
}
