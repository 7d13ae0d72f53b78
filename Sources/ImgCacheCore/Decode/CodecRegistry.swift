/// Every image format imgcache knows, one codec each: the one place that
/// says which formats exist, in what order their signatures are tried, which
/// are stored, written and animated. Adding a format is its codec's file
/// (and its C shim) and a line here.
public enum CodecRegistry {
    /// The codecs, in the order signatures are tried and stored formats are
    /// most common (a lookup tries an entry's names in this order).
    public static let codecs: [any ImageCodec] = [
        JPEGCodec(), PNGCodec(), WebPCodec(), GIFCodec(), AVIFCodec(), HEICCodec(), HEIFCodec(), JXLCodec(),
        TIFFCodec(), BMPCodec(), ICOCodec(), SVGCodec(),
    ]

    /// The codec of `format` (every format has one: formats come from codecs).
    public static func codec(for format: ImageFormat) -> any ImageCodec {
        codecs[index(of: format.rawValue) ?? 0]
    }

    /// The codec whose format is called `name`.
    static func codec(named name: String) -> (any ImageCodec)? {
        index(of: name).map { codecs[$0] }
    }

    /// What a cache hit asks of a format (its extension, media type), read once from each codec:
    /// a hit asks without going through a codec's existential or building a string. (Its name, for
    /// messages only, is asked of the codec.)
    struct Traits: Sendable {
        let name: String
        let fileExtension: String
        let mediaType: String
        let capabilities: CodecCapabilities
    }

    static let traits: [Traits] = codecs.map { codec in
        Traits(name: codec.format.rawValue, fileExtension: codec.fileExtensions.first ?? codec.format.rawValue,
               mediaType: codec.mediaType, capabilities: codec.capabilities)
    }

    /// `format`'s traits (every format has them: formats come from codecs).
    static func traits(of format: ImageFormat) -> Traits { traits[index(of: format.rawValue) ?? 0] }

    /// The place in `codecs` of the format called `name`. A walk of a dozen names: each is a
    /// short string held inline, so a comparison is two words (a dictionary would hash it first).
    private static func index(of name: String) -> Int? {
        traits.firstIndex { $0.name == name }
    }

    /// The stored format a file name extension names, read from its bytes in any case
    /// (`JPG`, `jpeg`): no string made; nil for any other extension.
    static func storedFormat(extensionBytes ext: UnsafeBufferPointer<UInt8>) -> ImageFormat? {
        guard ext.count <= 8 else { return nil }
        for (index, extensions) in storedExtensionBytes.enumerated() {
            for candidate in extensions where candidate.count == ext.count {
                var same = true
                for offset in 0..<ext.count where candidate[offset] != (ext[offset] >= 0x41 && ext[offset] <= 0x5A ? ext[offset] | 0x20 : ext[offset]) {
                    same = false
                    break
                }
                if same { return codecs[index].format }
            }
        }
        return nil
    }

    /// Each codec's extensions as bytes, in `codecs`' order (none for a codec that is not stored).
    private static let storedExtensionBytes: [[[UInt8]]] = codecs.map { codec in
        codec.capabilities.contains(.decode) ? codec.fileExtensions.map { Array($0.utf8) } : []
    }

    /// The codec of the first format whose signature `bytes` carry.
    public static func codec(recognizing bytes: [UInt8]) -> (any ImageCodec)? {
        codecs.first { $0.recognizes(bytes) }
    }

    /// The formats imgcache stores (it decodes their headers).
    public static var storedFormats: [ImageFormat] {
        codecs.filter { $0.capabilities.contains(.decode) }.map(\.format)
    }

    /// The stored formats as a request's `Accept` names them: the ones that
    /// carry a picture in the fewest bytes first (a server that negotiates
    /// sends its best), then the rest in the registry's order.
    public static var negotiatedFormats: [ImageFormat] {
        let best: [ImageFormat] = [.avif, .jxl, .webp]
        return best.filter(storedFormats.contains) + storedFormats.filter { !best.contains($0) }
    }

    /// The formats imgcache writes, for `--format` (and a transform's output).
    public static var writableFormats: [ImageFormat] {
        codecs.filter { $0.capabilities.contains(.encode) }.map(\.format)
    }

    /// The formats imgcache writes animated.
    public static var animatedFormats: [ImageFormat] {
        codecs.filter { $0.capabilities.contains(.animation) }.map(\.format)
    }

    /// The formats `capability` says, as people read a list: "PNG, JPEG, WebP or GIF"
    /// (`names`: their display names; else their extensions, as ".png, .jpg or .webp").
    public static func spelled(_ formats: [ImageFormat], extensions: Bool = false) -> String {
        let words = formats.map { extensions ? "." + $0.fileExtension : $0.displayName }
        guard words.count > 1 else { return words.first ?? "" }
        return words.dropLast().joined(separator: ", ") + " or " + words.last!
    }

    /// What a transform writes when the input's own format cannot be written:
    /// the first writable format that keeps transparency.
    public static var fallbackFormat: ImageFormat {
        codecs.first { $0.capabilities.isSuperset(of: [.encode, .alpha]) }?.format ?? writableFormats[0]
    }
}
