import CImgCacheShims

/// What imgcache knows of one image format: how to tell it from its first
/// bytes, read its header, check it is whole, decode it and encode it. One
/// type per format, in its own file of Decode/, registered once in
/// `CodecRegistry`; everything format-specific elsewhere (file extensions,
/// media types, `--format`'s values, the checks of a download as it arrives)
/// asks the registry. Nuke's `ImageDecoderRegistry` and SDWebImage's coders
/// manager are the same idea.
public protocol ImageCodec: Sendable {
    var format: ImageFormat { get }
    /// The name people know it by ("JPEG", "WebP").
    var displayName: String { get }
    /// File name extensions, the one imgcache gives its files first.
    var fileExtensions: [String] { get }
    /// The media type a server labels it with.
    var mediaType: String { get }
    var capabilities: CodecCapabilities { get }
    /// What its decoder takes beside the pixels it hands over, as a multiple of
    /// them (its own planes, rows and tables): a decode job's address space is
    /// sized from it. Each codec's was measured on 12-megapixel images
    /// (`prefetch --stats`' decode_peak_memory), with room to spare.
    var decodeMemoryFactor: Double { get }
    /// What its encoder takes, as a multiple of the RGBA pixels it is given.
    var encodeMemoryFactor: Double { get }

    /// Whether `bytes`, the first of a file (up to `ImageFormat.sniffLength`),
    /// carry this format's signature.
    func recognizes(_ bytes: [UInt8]) -> Bool
    /// Whether a file of this format may start with `prefix` (its first bytes, 64 of them on a
    /// cache hit), when `recognizes` cannot tell yet: an SVG's root element may come after a long
    /// prolog. By default, `recognizes`.
    func mayStart(with prefix: [UInt8]) -> Bool
    /// The header, read without decoding a pixel.
    func probe(_ bytes: [UInt8]) throws(ImageHeader.ProbeError) -> ImageHeader
    /// What is missing at the end of a whole file, if it was cut short; nil when complete.
    func missingEnd(of bytes: [UInt8]) -> String?
    /// Every pixel of every frame (up to `maximumFrames`; 0: all), the
    /// pixel limit checked again before each allocation.
    func decode(_ bytes: [UInt8], header: ImageHeader, maximumPixels: PixelLimit,
                maximumFrames: Int) throws(ImageDecoder.DecodeError) -> DecodedImage
    /// The image at a size no smaller than `atLeast` (width, height) where
    /// the format can decode it smaller for less (JPEG's DCT scaling); else whole.
    /// The picture is one to be shown: damage a decoder can conceal (a JPEG's
    /// scrambled scan data) is drawn as browsers draw it rather than refused.
    func decode(_ bytes: [UInt8], header: ImageHeader, maximumPixels: PixelLimit, maximumFrames: Int,
                atLeast size: (width: Int, height: Int)) throws(ImageDecoder.DecodeError) -> DecodedImage
    /// `rgba` (width × height × 4 bytes) in this format.
    func encode(_ rgba: ArraySlice<UInt8>, width: Int, height: Int,
                settings: ImageEncoder.Settings) throws(ImageEncoder.EncodeError) -> [UInt8]
    /// `frameCount` frames one after another in `frames`, animated.
    func encodeAnimation(_ frames: [UInt8], width: Int, height: Int, frameCount: Int, delays: [Int], loopCount: Int,
                         settings: ImageEncoder.Settings) throws(ImageEncoder.EncodeError) -> [UInt8]
}

/// What a codec can do.
public struct CodecCapabilities: OptionSet, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Its header is read and its pixels decoded: imgcache stores it.
    public static let decode = CodecCapabilities(rawValue: 1 << 0)
    /// imgcache writes it (thumbnails, conversions).
    public static let encode = CodecCapabilities(rawValue: 1 << 1)
    /// imgcache writes animations in it.
    public static let animation = CodecCapabilities(rawValue: 1 << 2)
    /// It keeps transparency (else transparent pixels are flattened onto a background).
    public static let alpha = CodecCapabilities(rawValue: 1 << 3)
    /// Its encoder takes a quality (lossy).
    public static let quality = CodecCapabilities(rawValue: 1 << 4)
}

/// What a codec without a decoder or encoder answers.
extension ImageCodec {
    public func probe(_ bytes: [UInt8]) throws(ImageHeader.ProbeError) -> ImageHeader { throw .unsupported(format) }

    public func missingEnd(of bytes: [UInt8]) -> String? { nil }

    public func mayStart(with prefix: [UInt8]) -> Bool { recognizes(prefix) }

    public func decode(_ bytes: [UInt8], header: ImageHeader, maximumPixels: PixelLimit,
                       maximumFrames: Int) throws(ImageDecoder.DecodeError) -> DecodedImage {
        throw .unsupported(format)
    }

    public func decode(_ bytes: [UInt8], header: ImageHeader, maximumPixels: PixelLimit, maximumFrames: Int,
                       atLeast size: (width: Int, height: Int)) throws(ImageDecoder.DecodeError) -> DecodedImage {
        try decode(bytes, header: header, maximumPixels: maximumPixels, maximumFrames: maximumFrames)
    }

    public func encode(_ rgba: ArraySlice<UInt8>, width: Int, height: Int,
                       settings: ImageEncoder.Settings) throws(ImageEncoder.EncodeError) -> [UInt8] {
        throw .unsupported(format)
    }

    public func encodeAnimation(_ frames: [UInt8], width: Int, height: Int, frameCount: Int, delays: [Int], loopCount: Int,
                                settings: ImageEncoder.Settings) throws(ImageEncoder.EncodeError) -> [UInt8] {
        throw .unsupported(format)
    }

    public var displayName: String { format.rawValue.uppercased() }
    public var decodeMemoryFactor: Double { 2 }
    public var encodeMemoryFactor: Double { 2 }
    public var mediaType: String { "image/" + format.rawValue }
}

/// The C side's conventions, shared by the codecs that call it.
enum CodecShim {
    typealias Decoder = (UnsafePointer<UInt8>?, Int, UInt64, UInt32, UnsafeMutablePointer<ic_decoded_image>?,
                         UnsafeMutablePointer<CChar>?, Int) -> Int32
    typealias HeaderReader = (UnsafePointer<UInt8>?, Int, UnsafeMutablePointer<ic_image_header>?,
                              UnsafeMutablePointer<CChar>?, Int) -> Int32

    /// The text a C function left in `buffer`.
    /// The text a C function left in `buffer`, on one line: the libraries end
    /// some messages with a newline, and a message is one line of stderr.
    static func message(_ buffer: [CChar]) -> String {
        let text = String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let line = text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }).map { $0.trimmingWhitespace }.filter { !$0.isEmpty }
        return line.joined(separator: " ")
    }

    /// A header from a library's reader (libpng's, libjpeg's).
    static func header(_ bytes: [UInt8], format: ImageFormat, _ read: HeaderReader) throws(ImageHeader.ProbeError) -> ic_image_header {
        var header = ic_image_header()
        var buffer = [CChar](repeating: 0, count: 256)
        let status = bytes.withUnsafeBufferPointer { read($0.baseAddress, $0.count, &header, &buffer, buffer.count) }
        guard status == 0 else {
            let text = message(buffer)
            if text.hasPrefix("cannot load") { throw .libraryMissing(text) }
            throw .corrupt(format, text)
        }
        guard header.width > 0, header.height > 0 else { throw .corrupt(format, "zero width or height") }
        return header
    }

    /// Every pixel through a C decoder, as `DecodedImage`.
    static func decode(_ bytes: [UInt8], header: ImageHeader, maximumPixels: PixelLimit, maximumFrames: Int,
                       _ decoder: Decoder) throws(ImageDecoder.DecodeError) -> DecodedImage {
        var image = ic_decoded_image()
        var buffer = [CChar](repeating: 0, count: 256)
        let status = bytes.withUnsafeBufferPointer { input in
            decoder(input.baseAddress, input.count, UInt64(maximumPixels.pixels), UInt32(max(0, maximumFrames)),
                    &image, &buffer, buffer.count)
        }
        guard status == 0 else {
            let text = message(buffer)
            if text.hasPrefix("cannot load") { throw .libraryMissing(text) }
            if text.hasPrefix("more pixels than the limit") {
                // Every frame decoded counts: the header's frames, when all were to be decoded.
                let frames = maximumFrames == 1 ? 1 : maximumFrames == 0 ? header.frameCount ?? 1 : min(maximumFrames, header.frameCount ?? 1)
                throw .tooManyPixels(width: header.codedWidth, height: header.codedHeight, limit: maximumPixels, frames: frames)
            }
            throw .corrupt(header.format, text.isEmpty ? "does not decode" : text)
        }
        defer { ic_decoded_image_free(&image) }
        let frames = Int(image.frame_count)
        let count = Int(image.width) * Int(image.height) * 4 * frames
        let pixels = [UInt8](UnsafeBufferPointer(start: image.pixels, count: count))
        let delays = image.delays_ms.map { pointer in (0..<frames).map { Int(pointer[$0]) } } ?? [0]
        return DecodedImage(format: header.format, width: Int(image.width), height: Int(image.height), frameCount: frames,
                            pixels: pixels, delays: delays, loopCount: image.loop_count < 0 ? nil : Int(image.loop_count),
                            orientation: header.orientation, colour: ImageColour(image))
    }

    /// A C decoder that decodes smaller, to no less than a width and a height.
    typealias ReducedDecoder = (UnsafePointer<UInt8>?, Int, UInt64, UInt32, UInt32, UnsafeMutablePointer<ic_decoded_image>?,
                                UnsafeMutablePointer<CChar>?, Int) -> Int32

    /// Every pixel through a C decoder that decodes smaller, to at least `size`.
    static func decode(_ bytes: [UInt8], header: ImageHeader, maximumPixels: PixelLimit, maximumFrames: Int,
                       atLeast size: (width: Int, height: Int), _ decoder: ReducedDecoder) throws(ImageDecoder.DecodeError) -> DecodedImage {
        let width = UInt32(clamping: size.width), height = UInt32(clamping: size.height)
        return try decode(bytes, header: header, maximumPixels: maximumPixels, maximumFrames: maximumFrames) {
            data, count, limit, _, image, message, messageSize in
            decoder(data, count, limit, width, height, image, message, messageSize)
        }
    }

    /// Bytes a C encoder made, or its failure as an `EncodeError`.
    static func encoded(_ format: ImageFormat, _ call: (UnsafeMutablePointer<ic_encoded>, UnsafeMutablePointer<CChar>, Int) -> Int32)
        throws(ImageEncoder.EncodeError) -> [UInt8] {
        var encoded = ic_encoded()
        var buffer = [CChar](repeating: 0, count: 256)
        let status = buffer.withUnsafeMutableBufferPointer { call(&encoded, $0.baseAddress!, $0.count) }
        guard status == 0 else {
            let text = message(buffer)
            if text.hasPrefix("cannot load") { throw .libraryMissing(text) }
            throw .failed(format, text)
        }
        defer { ic_encoded_free(&encoded) }
        return [UInt8](UnsafeBufferPointer(start: encoded.bytes, count: encoded.size))
    }

    /// A little-endian unsigned number of `count` bytes at `offset`.
    static func littleEndian(_ bytes: [UInt8], _ offset: Int, _ count: Int) -> Int {
        var value = 0
        for index in (0..<count).reversed() { value = value << 8 | Int(bytes[offset + index]) }
        return value
    }

    /// A big-endian 32-bit number at `offset`.
    static func bigEndian(_ bytes: [UInt8], _ offset: Int) -> Int {
        Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
    }

    /// Whether `bytes` hold `signature` at `offset`.
    static func starts(_ bytes: [UInt8], with signature: [UInt8], at offset: Int = 0) -> Bool {
        bytes.count >= offset + signature.count && bytes[offset..<offset + signature.count].elementsEqual(signature)
    }
}

public extension Substring {
    /// The text without the white space at its ends.
    var trimmingWhitespace: String {
        String(drop(while: { $0.isWhitespace }).reversed().drop(while: { $0.isWhitespace }).reversed())
    }
}
