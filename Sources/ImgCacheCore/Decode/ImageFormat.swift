/// An image container format, recognised from its full magic signature.
///
/// A name only: what a format is (its signature, extensions, header,
/// decoder, encoder) is its codec's, and the formats there are are the
/// `CodecRegistry`'s. Each codec's file declares its format as a static
/// member (`ImageFormat.jpeg`).
public struct ImageFormat: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The lower-case name (`jpeg`, `webp`), as metadata and JSON write it.
    public let rawValue: String

    /// A format the registry knows by this name; nil for any other.
    public init?(rawValue: String) {
        guard CodecRegistry.codec(named: rawValue) != nil else { return nil }
        self.rawValue = rawValue
    }

    /// A format's identity, for the static member its codec declares.
    init(declaring name: String) {
        rawValue = name
    }

    /// Every format imgcache knows, in the registry's order.
    public static var allCases: [ImageFormat] { CodecRegistry.codecs.map(\.format) }

    /// The stored format a file name's extension names (`jpg`, `jpeg` and
    /// `jpe` are JPEG), in any case; nil for any other extension.
    public init?(fileExtension ext: some StringProtocol) {
        var text = String(ext)
        guard let format = text.withUTF8(CodecRegistry.storedFormat(extensionBytes:)) else { return nil }
        self = format
    }

    /// The stored format the extension of the file name `path` names, if any.
    public init?(namedBy path: String) {
        let name = path.split(separator: "/").last ?? ""
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return nil }
        self.init(fileExtension: name[name.index(after: dot)...])
    }


    /// The extension imgcache gives files of this format (`jpg` for JPEG).
    public var fileExtension: String { CodecRegistry.traits(of: self).fileExtension }

    /// Formats imgcache stores and decodes; the rest are named but refused.
    public var isSupported: Bool { CodecRegistry.traits(of: self).capabilities.contains(.decode) }

    /// The name users see ("JPEG", "WebP").
    public var displayName: String { CodecRegistry.codec(for: self).displayName }

    /// The media type of its files (`image/jpeg`).
    public var mediaType: String { CodecRegistry.traits(of: self).mediaType }

    public var description: String { rawValue }

    /// How many leading bytes `sniff` needs to decide.
    public static let sniffLength = 512

    /// Identifies the format from the first bytes of a file, or nil when they
    /// are not the start of any image format imgcache knows.
    public static func sniff(_ bytes: [UInt8]) -> ImageFormat? {
        CodecRegistry.codec(recognizing: bytes)?.format
    }

    /// Whether a file whose first bytes are `prefix` may be of this format: recognised as it, or
    /// recognised as none yet but a possible start of one (an SVG's long prolog).
    func mayStart(_ prefix: [UInt8]) -> Bool {
        guard let found = ImageFormat.sniff(prefix) else { return CodecRegistry.codec(for: self).mayStart(with: prefix) }
        return found == self
    }
}
