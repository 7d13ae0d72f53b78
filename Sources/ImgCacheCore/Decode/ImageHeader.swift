import CImgCacheShims

/// What an image's header says, read without decoding any pixel.
public struct ImageHeader: Equatable, Sendable {
    public let format: ImageFormat
    public let width: Int
    public let height: Int
    /// Number of frames, where the header alone tells it (JPEG is always 1);
    /// nil for formats whose frames are only counted by walking the file.
    public let frameCount: Int?

    public init(format: ImageFormat, width: Int, height: Int, frameCount: Int? = nil) {
        self.format = format
        self.width = width
        self.height = height
        self.frameCount = frameCount
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

    /// Reads the header of a supported image from its first bytes (or all of them).
    /// PNG and JPEG go through libpng and libjpeg; GIF and WebP headers are a few
    /// fixed fields and are read here.
    public static func probe(_ bytes: [UInt8]) throws(ProbeError) -> ImageHeader {
        guard let format = ImageFormat.sniff(bytes) else { throw .notAnImage }
        switch format {
        case .png: return try probeWithLibrary(bytes, format: .png, ic_png_read_header)
        case .jpeg: return try probeWithLibrary(bytes, format: .jpeg, ic_jpeg_read_header)
        case .gif: return try probeGIF(bytes)
        case .webp: return try probeWebP(bytes)
        default: throw .unsupported(format)
        }
    }

    private typealias LibraryProbe = (UnsafePointer<UInt8>?, Int, UnsafeMutablePointer<ic_image_header>?, UnsafeMutablePointer<CChar>?, Int) -> Int32

    private static func probeWithLibrary(_ bytes: [UInt8], format: ImageFormat, _ probe: LibraryProbe) throws(ProbeError) -> ImageHeader {
        var header = ic_image_header()
        var message = [CChar](repeating: 0, count: 256)
        let status = bytes.withUnsafeBufferPointer { buffer in
            probe(buffer.baseAddress, buffer.count, &header, &message, message.count)
        }
        guard status == 0 else {
            let text = String(decoding: message.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if text.hasPrefix("cannot load") { throw .libraryMissing(text) }
            throw .corrupt(format, text)
        }
        guard header.width > 0, header.height > 0 else { throw .corrupt(format, "zero width or height") }
        return ImageHeader(format: format, width: Int(header.width), height: Int(header.height),
                           frameCount: format == .jpeg ? 1 : nil)
    }

    private static func littleEndian(_ bytes: [UInt8], _ offset: Int, _ count: Int) -> Int {
        var value = 0
        for index in (0..<count).reversed() { value = value << 8 | Int(bytes[offset + index]) }
        return value
    }

    private static func probeGIF(_ bytes: [UInt8]) throws(ProbeError) -> ImageHeader {
        guard bytes.count >= 10 else { throw .corrupt(.gif, "file ends inside the screen descriptor") }
        let width = littleEndian(bytes, 6, 2), height = littleEndian(bytes, 8, 2)
        guard width > 0, height > 0 else { throw .corrupt(.gif, "zero width or height") }
        return ImageHeader(format: .gif, width: width, height: height)
    }

    private static func probeWebP(_ bytes: [UInt8]) throws(ProbeError) -> ImageHeader {
        let chunk = String(decoding: bytes[12..<16], as: UTF8.self)
        switch chunk {
        case "VP8 ":
            // Frame tag (3 bytes), start code 9D 01 2A, then 14-bit width and height.
            guard bytes.count >= 30, bytes[23] == 0x9D, bytes[24] == 0x01, bytes[25] == 0x2A else {
                throw .corrupt(.webp, "bad VP8 start code")
            }
            return try sized(littleEndian(bytes, 26, 2) & 0x3FFF, littleEndian(bytes, 28, 2) & 0x3FFF)
        case "VP8L":
            guard bytes.count >= 25, bytes[20] == 0x2F else { throw .corrupt(.webp, "bad VP8L signature") }
            let bits = littleEndian(bytes, 21, 4)
            return try sized((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
        default:
            guard bytes.count >= 30 else { throw .corrupt(.webp, "file ends inside the VP8X header") }
            return try sized(littleEndian(bytes, 24, 3) + 1, littleEndian(bytes, 27, 3) + 1)
        }
        func sized(_ width: Int, _ height: Int) throws(ProbeError) -> ImageHeader {
            guard width > 0, height > 0 else { throw .corrupt(.webp, "zero width or height") }
            return ImageHeader(format: .webp, width: width, height: height)
        }
    }
}
