/// The name of a cache entry: the key string (a URL's absolute form) and the
/// file names derived from it, after SDWebImage's `cachedFileNameForKey:`:
/// `<md5 of the key>.<extension>`.
///
/// The extension is the stored bytes' (`jpg`, `png`, `gif`, `webp`), not the
/// URL's, so other programs can trust it; it is chosen when an entry is
/// stored. A lookup therefore tries the names an entry can have, the likely
/// one first: the format the URL's extension names (or a transform's format).
public struct CacheKey: Equatable, Hashable, Sendable {
    /// The key itself, normally the URL as given.
    public let string: String
    /// 32 lowercase hex digits: MD5 of the key's UTF-8 bytes.
    public let digest: String
    /// The extension an entry most likely has: the stored format the URL's
    /// extension names, or a transform's; nil when neither says.
    public private(set) var fileExtension: String?
    /// The URL path's own extension when short and plain but no stored
    /// format's: the name entries of earlier versions have (they took the URL's
    /// extension), still found by lookups.
    private(set) var legacyExtension: String?
    /// The digest's first and last 8 bytes, as the hex digits read (a fingerprint of the key
    /// without parsing `digest` back).
    let digestHigh: UInt64, digestLow: UInt64

    /// Extensions longer than this are left off the file name.
    public static let maximumExtensionLength = 8
    /// Whether `ext` (lower case) is one the cache uses for its own files, never taken from a URL. Two words compared, not a
    /// `Set`: every key asks, and a set's first use costs its type's set-up.
    static func isReserved(_ ext: String) -> Bool { ext == "meta" || ext == "tmp" }
    /// The extensions of the formats stored, most common first: the order a
    /// lookup tries them when the URL does not say.
    public static let formatExtensions = CodecRegistry.storedFormats.map(\.fileExtension)

    public init(_ string: String) {
        self.init(string, fileExtension: nil)
        let urlExtension = CacheKey.plainExtension(ofURL: string)
        let format = urlExtension.flatMap { ImageFormat(fileExtension: $0)?.fileExtension }
        fileExtension = format
        legacyExtension = urlExtension == format ? nil : urlExtension
    }

    /// A key whose likely extension is given rather than read from the URL
    /// (transformed images, whose format may not be the URL's).
    public init(_ string: String, fileExtension: String?) {
        self.string = string
        var text = string
        let words = text.withUTF8 { MD5.words(UnsafeRawBufferPointer($0)) }
        digest = MD5.hex(words)
        digestHigh = UInt64(words.0.byteSwapped) << 32 | UInt64(words.1.byteSwapped)
        digestLow = UInt64(words.2.byteSwapped) << 32 | UInt64(words.3.byteSwapped)
        self.fileExtension = fileExtension
        legacyExtension = nil
    }

    /// The file name of this key's entry when its bytes are `format`.
    public func fileName(for format: ImageFormat) -> String {
        String.joined(digest, ".", format.fileExtension)
    }

    /// The names an entry of this key can have, the likeliest first: each
    /// stored format's, then those of earlier versions (the URL's own
    /// extension, or none).
    public var candidateFileNames: [String] {
        var extensions = CacheKey.formatExtensions
        if let fileExtension, let index = extensions.firstIndex(of: fileExtension) {
            extensions.remove(at: index)
            extensions.insert(fileExtension, at: 0)
        }
        var names = extensions.map { digest + "." + $0 }
        if let legacyExtension { names.append(digest + "." + legacyExtension) }
        names.append(digest)
        return names
    }

    /// The first of `candidateFileNames`, without making the others (a hit needs no more).
    var likeliestFileName: String {
        guard let fileExtension, CacheKey.formatExtensions.contains(fileExtension) else {
            return String.joined(digest, ".", CacheKey.formatExtensions[0])
        }
        return String.joined(digest, ".", fileExtension)
    }

    /// The key as its metadata records it: credentials in the URL are hidden.
    /// (The file name still comes from the whole key, so entries stay apart.)
    public var storedForm: String { RemoteURL.redacted(string) }

    /// The likeliest file name of the entry (the first candidate).
    public var fileName: String {
        String.joined(digest, ".", fileExtension ?? CacheKey.formatExtensions[0])
    }

    /// The fan-out folder: the digest's first two hex digits (256 folders).
    public var shard: String { String(decoding: digest.utf8.prefix(2), as: UTF8.self) }

    /// The shard as a number, 0–255: the digest's first byte (its first two hex digits), kept as a number already.
    public var shardIndex: Int { Int(digestHigh >> 56) }

    /// The extension of the URL's path (query and fragment ignored) when it is
    /// 1–8 ASCII letters or digits and not one the cache reserves.
    public static func plainExtension(ofURL url: String) -> String? {
        // Every stored URL passes here: an ASCII one (nearly all) is read as bytes, the rest as characters.
        if let ascii = url.utf8.withContiguousStorageIfAvailable(plainExtension(ofASCII:)), let found = ascii { return found }
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
        return isReserved(lowered) ? nil : lowered
    }

    /// `plainExtension(ofURL:)` of a URL's bytes when they are all ASCII (one byte a
    /// character, so the same answer); nil, to be read as characters, when they are not.
    private static func plainExtension(ofASCII bytes: UnsafeBufferPointer<UInt8>) -> String?? {
        guard !bytes.contains(where: { $0 >= 0x80 }) else { return nil }
        let end = bytes.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? bytes.count
        let start = URLText.authorityStart(in: bytes, before: end) ?? 0
        guard let pathStart = (start..<end).first(where: { bytes[$0] == UInt8(ascii: "/") }) else { return .some(nil) }
        let componentStart = (pathStart..<end).last { bytes[$0] == UInt8(ascii: "/") }! + 1
        guard let dot = (componentStart..<end).last(where: { bytes[$0] == UInt8(ascii: ".") }), dot != componentStart else {
            return .some(nil)
        }
        let ext = UnsafeBufferPointer(rebasing: bytes[(dot + 1)..<end])
        guard (1...maximumExtensionLength).contains(ext.count), ext.allSatisfy({ ($0 | 0x20) >= 0x61 && ($0 | 0x20) <= 0x7A || ($0 >= 0x30 && $0 <= 0x39) })
        else { return .some(nil) }
        let lowered = String(unsafeUninitializedCapacity: ext.count) { lower in
            for (at, byte) in ext.enumerated() { lower[at] = byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte }
            return ext.count
        }
        return .some(isReserved(lowered) ? nil : lowered)
    }
}
