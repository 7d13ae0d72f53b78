/// An image container format, recognised from its full magic signature.
public enum ImageFormat: String, CaseIterable, Equatable, Sendable {
    case jpeg, png, gif, webp
    case tiff, bmp, heic, heif, avif, svg

    /// The stored format a file name's extension names (`jpg`, `jpeg` and
    /// `jpe` are JPEG), in any case; nil for any other extension.
    public init?(fileExtension ext: some StringProtocol) {
        switch ext.lowercased() {
        case "jpg", "jpeg", "jpe", "jfif": self = .jpeg
        case "png", "apng": self = .png
        case "gif": self = .gif
        case "webp": self = .webp
        default: return nil
        }
    }

    /// The stored format the extension of the file name `path` names, if any.
    public init?(namedBy path: String) {
        let name = path.split(separator: "/").last ?? ""
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return nil }
        self.init(fileExtension: name[name.index(after: dot)...])
    }

    /// The extension imgcache gives files of this format (`jpg` for JPEG).
    public var fileExtension: String {
        self == .jpeg ? "jpg" : rawValue
    }

    /// Formats imgcache stores and decodes; the rest are named but refused.
    public var isSupported: Bool {
        switch self {
        case .jpeg, .png, .gif, .webp: return true
        default: return false
        }
    }

    /// The name users see ("JPEG", "WebP").
    public var displayName: String {
        switch self {
        case .jpeg: return "JPEG"
        case .png: return "PNG"
        case .gif: return "GIF"
        case .webp: return "WebP"
        case .tiff: return "TIFF"
        case .bmp: return "BMP"
        case .heic: return "HEIC"
        case .heif: return "HEIF"
        case .avif: return "AVIF"
        case .svg: return "SVG"
        }
    }

    /// How many leading bytes `sniff` needs to decide.
    public static let sniffLength = 512

    /// Identifies the format from the first bytes of a file, or nil when they
    /// are not the start of any image format imgcache knows.
    public static func sniff(_ bytes: [UInt8]) -> ImageFormat? {
        func starts(_ signature: [UInt8], at offset: Int = 0) -> Bool {
            bytes.count >= offset + signature.count && Array(bytes[offset..<offset + signature.count]) == signature
        }
        let ascii: (String) -> [UInt8] = { Array($0.utf8) }
        if starts([0xFF, 0xD8, 0xFF]) { return .jpeg }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if starts(ascii("GIF87a")) || starts(ascii("GIF89a")) { return .gif }
        if starts(ascii("RIFF")) && starts(ascii("WEBP"), at: 8)
            && (starts(ascii("VP8 "), at: 12) || starts(ascii("VP8L"), at: 12) || starts(ascii("VP8X"), at: 12)) {
            return .webp
        }
        if starts([0x49, 0x49, 0x2A, 0x00]) || starts([0x4D, 0x4D, 0x00, 0x2A]) { return .tiff }
        if starts(ascii("BM")) && bytes.count >= 18 {
            // BITMAPFILEHEADER, then a DIB header whose size is one of the known ones.
            let dibSize = UInt32(bytes[14]) | UInt32(bytes[15]) << 8 | UInt32(bytes[16]) << 16 | UInt32(bytes[17]) << 24
            if [12, 40, 52, 56, 64, 108, 124].contains(dibSize) { return .bmp }
        }
        if starts(ascii("ftyp"), at: 4), bytes.count >= 12 {
            let brand = String(decoding: bytes[8..<12], as: UTF8.self)
            switch brand {
            case "avif", "avis": return .avif
            case "heic", "heix", "heim", "heis", "hevc", "hevx": return .heic
            case "mif1", "msf1", "heif": return .heif
            default: break
            }
        }
        if looksLikeSVG(bytes) { return .svg }
        return nil
    }

    /// An XML or bare `<svg` document: optional BOM, whitespace, XML declaration,
    /// comments and doctype, then an `<svg` element.
    private static func looksLikeSVG(_ bytes: [UInt8]) -> Bool {
        var text = Substring(String(decoding: bytes.prefix(sniffLength), as: UTF8.self))
        if text.hasPrefix("\u{FEFF}") { text = text.dropFirst() }
        while true {
            text = text.drop(while: { $0.isWhitespace })
            if text.hasPrefix("<svg") { return true }
            let closers: [(String, String)] = [("<?", "?>"), ("<!--", "-->"), ("<!", ">")]
            guard let (_, closer) = closers.first(where: { text.hasPrefix($0.0) }),
                  let end = text.firstRange(of: closer) else { return false }
            text = text[end.upperBound...]
        }
    }
}
