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
        codec(named: format.rawValue) ?? codecs[0]
    }

    /// The codec whose format is called `name`.
    static func codec(named name: String) -> (any ImageCodec)? {
        indexByName[name].map { codecs[$0] }
    }

    /// Each codec's place in `codecs` by its format's name, and each stored extension's, made on
    /// first use: a hit asks both (a walk of the codecs compares a string with each).
    private static let indexByName = Dictionary(uniqueKeysWithValues: codecs.indices.map { (codecs[$0].format.rawValue, $0) })
    private static let indexByExtension: [String: Int] = codecs.indices.reduce(into: [:]) { table, index in
        guard codecs[index].capabilities.contains(.decode) else { return }
        for ext in codecs[index].fileExtensions where table[ext] == nil { table[ext] = index }
    }

    /// The codec of the first format whose signature `bytes` carry.
    public static func codec(recognizing bytes: [UInt8]) -> (any ImageCodec)? {
        codecs.first { $0.recognizes(bytes) }
    }

    /// The stored format a file name extension (lower case) names.
    static func codec(forExtension ext: String) -> (any ImageCodec)? {
        indexByExtension[ext].map { codecs[$0] }
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
