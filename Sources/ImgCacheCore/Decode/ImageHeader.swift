/// What an image's header says, read without decoding any pixel.
public struct ImageHeader: Equatable, Sendable {
    public let format: ImageFormat
    public let width: Int
    public let height: Int
    /// Number of frames: counted from the chunks or blocks (GIF, APNG, animated
    /// WebP), 1 for still images.
    public let frameCount: Int?
    /// Whether pixels may be transparent: an alpha channel, tRNS, the first GIF
    /// frame's transparent colour, WebP's alpha flag.
    public let hasAlpha: Bool
    /// Bits per sample (PNG 1–16, JPEG 8 or 12; 8 for GIF and WebP).
    public let bitDepth: Int
    /// The EXIF orientation (1–8) the image asks to be shown in; 1: as stored.
    public let orientation: Int

    /// Whether the file embeds a colour profile (an ICC profile, PNG's cICP): its pixels may not be
    /// sRGB. Told by the formats imgcache writes (JPEG, PNG, WebP), which are all a thumbnail may be
    /// served as is; false for the others.
    public var hasColourProfile = false

    /// The size the decoder works at, when larger than the size shown: an
    /// AVIF or HEIC coded at its `ispe` size and cropped by its clean
    /// aperture. The pixel limit is checked against it.
    public var codedWidth: Int
    public var codedHeight: Int

    /// The images an SVG embeds (as data: URLs): drawing it decodes each at its own size, so their
    /// pixels count with its own against the pixel limit. Nil for every other format.
    public var embedded: EmbeddedImages?

    /// How many images a document embeds and their pixels together.
    public struct EmbeddedImages: Equatable, Sendable {
        public var count: Int
        public var pixels: Int

        /// Counted with `other`'s (saturating: a sum that does not fit is over any limit).
        mutating func add(_ other: EmbeddedImages) {
            count += other.count
            let (sum, overflow) = pixels.addingReportingOverflow(other.pixels)
            pixels = overflow ? Int.max : sum
        }
    }

    /// The pixels decoding it takes, one frame: its coded size, and the images it embeds (Int.max past counting).
    public var pixelsToDecode: Int {
        let (area, overflow) = codedWidth.multipliedReportingOverflow(by: codedHeight)
        guard !overflow else { return Int.max }
        let (sum, over) = area.addingReportingOverflow(embedded?.pixels ?? 0)
        return over ? Int.max : sum
    }

    /// More than one frame.
    public var isAnimated: Bool { (frameCount ?? 1) > 1 }

    /// The size as shown: orientations 5–8 turn the picture a quarter.
    public var uprightSize: (width: Int, height: Int) { orientation >= 5 ? (height, width) : (width, height) }

    public init(format: ImageFormat, width: Int, height: Int, frameCount: Int? = nil, hasAlpha: Bool = false, bitDepth: Int = 8,
                orientation: Int = 1) {
        self.format = format
        self.width = width
        self.height = height
        self.frameCount = frameCount
        self.hasAlpha = hasAlpha
        self.bitDepth = bitDepth
        self.orientation = (1...8).contains(orientation) ? orientation : 1
        codedWidth = width
        codedHeight = height
    }

    /// The same header with `frameCount` frames (counted elsewhere: when it was stored).
    func with(frameCount: Int) -> ImageHeader {
        var header = ImageHeader(format: format, width: width, height: height, frameCount: frameCount, hasAlpha: hasAlpha,
                                 bitDepth: bitDepth, orientation: orientation)
        header.codedWidth = codedWidth
        header.codedHeight = codedHeight
        header.hasColourProfile = hasColourProfile
        header.embedded = embedded
        return header
    }

    /// Why a payload was not accepted as an image.
    public enum ProbeError: Error, Equatable, Sendable, CustomStringConvertible {
        /// No known image signature.
        case notAnImage
        /// A known format imgcache does not store (TIFF, BMP, HEIC, …).
        case unsupported(ImageFormat)
        /// The signature matched but the header does not decode.
        case corrupt(ImageFormat, String)
        /// A C library could not be loaded.
        case libraryMissing(String)

        public var description: String {
            switch self {
            case .notAnImage: return "not an image"
            case .unsupported(let format): return "\(format.displayName) images are not supported"
            case .corrupt(let format, let reason): return "corrupt \(format.displayName) header: \(reason)"
            case .libraryMissing(let message): return message
            }
        }
    }

    /// Reads the header of a stored format from its first bytes (or all of
    /// them), through the format's codec: a format imgcache recognises but
    /// does not decode is `unsupported`, whatever follows its signature.
    public static func probe(_ bytes: [UInt8]) throws(ProbeError) -> ImageHeader {
        guard let codec = CodecRegistry.codec(recognizing: bytes) else { throw .notAnImage }
        guard codec.capabilities.contains(.decode) else { throw .unsupported(codec.format) }
        return try codec.probe(bytes)
    }

    /// Whether a whole file of `format` ends as that format ends, so that a
    /// download cut short (a server lying about its length) is caught without
    /// decoding. Nil when complete, else what is missing.
    public static func missingEnd(of bytes: [UInt8], format: ImageFormat) -> String? {
        CodecRegistry.codec(for: format).missingEnd(of: bytes)
    }
}
