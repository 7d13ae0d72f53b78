/// The name of a cache entry: the key string (a URL's absolute form) and the
/// file name derived from it, SDWebImage's `cachedFileNameForKey:` rule.
public struct CacheKey: Equatable, Hashable, Sendable {
    /// The key itself, normally the URL as given.
    public let string: String
    /// 32 lowercase hex digits: MD5 of the key's UTF-8 bytes.
    public let digest: String
    /// The URL path's extension when short and plain, lowercased; else nil.
    public let fileExtension: String?

    /// Extensions longer than this are left off the file name.
    public static let maximumExtensionLength = 8
    /// Extensions the cache uses for its own files, never taken from a URL.
    static let reservedExtensions: Set<String> = ["meta", "tmp"]

    public init(_ string: String) {
        self.string = string
        self.digest = MD5.hex(string)
        self.fileExtension = CacheKey.plainExtension(ofURL: string)
    }

    /// A key whose file extension is given rather than read from the URL
    /// (transformed images, whose format may not be the URL's).
    public init(_ string: String, fileExtension: String?) {
        self.string = string
        self.digest = MD5.hex(string)
        self.fileExtension = fileExtension
    }

    /// The key as its metadata records it: credentials in the URL are hidden.
    /// (The file name still comes from the whole key, so entries stay apart.)
    public var storedForm: String { RemoteURL.redacted(string) }

    /// The image file's name: `<digest>` or `<digest>.<ext>`.
    public var fileName: String {
        guard let fileExtension else { return digest }
        return digest + "." + fileExtension
    }

    /// The fan-out folder: the digest's first two hex digits (256 folders).
    public var shard: String { String(digest.prefix(2)) }

    /// The shard as a number, 0–255.
    public var shardIndex: Int { Int(digest.prefix(2), radix: 16) ?? 0 }

    /// The extension of the URL's path (query and fragment ignored) when it is
    /// 1–8 ASCII letters or digits and not one the cache reserves.
    public static func plainExtension(ofURL url: String) -> String? {
        var rest = Substring(url)
        if let end = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) { rest = rest[..<end] }
        if let scheme = rest.firstRange(of: "://") { rest = rest[scheme.upperBound...] }
        guard let pathStart = rest.firstIndex(of: "/") else { return nil }
        let path = rest[pathStart...]
        let lastComponent = path[(path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex)...]
        guard let dot = lastComponent.lastIndex(of: "."), dot != lastComponent.startIndex else { return nil }
        let ext = lastComponent[lastComponent.index(after: dot)...]
        guard (1...maximumExtensionLength).contains(ext.count),
              ext.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else { return nil }
        let lowered = ext.lowercased()
        return reservedExtensions.contains(lowered) ? nil : lowered
    }
}
