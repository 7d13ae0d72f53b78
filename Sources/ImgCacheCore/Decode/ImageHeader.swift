import CImgCacheShims

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

    /// More than one frame.
    public var isAnimated: Bool { (frameCount ?? 1) > 1 }

    public init(format: ImageFormat, width: Int, height: Int, frameCount: Int? = nil, hasAlpha: Bool = false, bitDepth: Int = 8) {
        self.format = format
        self.width = width
        self.height = height
        self.frameCount = frameCount
        self.hasAlpha = hasAlpha
        self.bitDepth = bitDepth
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
        let frames = format == .png ? apngFrameCount(bytes) ?? 1 : 1
        return ImageHeader(format: format, width: Int(header.width), height: Int(header.height), frameCount: frames,
                           hasAlpha: header.has_alpha != 0, bitDepth: Int(header.bit_depth))
    }

    private static func bigEndian(_ bytes: [UInt8], _ offset: Int) -> Int {
        Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
    }

    /// An APNG's frame count from its `acTL` chunk (which precedes the first
    /// IDAT); nil for a plain PNG.
    static func apngFrameCount(_ bytes: [UInt8]) -> Int? {
        var offset = 8
        while offset + 12 <= bytes.count {
            let length = bigEndian(bytes, offset)
            let type = bytes[(offset + 4)..<(offset + 8)]
            if type.elementsEqual("acTL".utf8), length >= 8, offset + 16 <= bytes.count {
                return max(1, bigEndian(bytes, offset + 8))
            }
            if type.elementsEqual("IDAT".utf8) { return nil }
            guard length >= 0, length <= bytes.count else { return nil }
            offset += 12 + length
        }
        return nil
    }

    /// Whether a whole file of `format` ends as that format ends, so that a
    /// download cut short (a server lying about its length) is caught without
    /// decoding: PNG's chunks up to IEND, JPEG's end-of-image marker after its
    /// first scan, WebP's RIFF size. (GIF's blocks are walked by the probe; a
    /// GIF cut exactly between two frames, its trailer lost, passes.) Nil when
    /// complete, else what is missing.
    public static func missingEnd(of bytes: [UInt8], format: ImageFormat) -> String? {
        switch format {
        case .png:
            // Chunk by chunk to IEND; whatever follows it (rare) does not matter.
            var offset = 8
            while offset + 12 <= bytes.count {
                let length = bigEndian(bytes, offset)
                if bytes[(offset + 4)..<(offset + 8)].elementsEqual("IEND".utf8) { return nil }
                guard length >= 0, length <= bytes.count else { break }
                offset += 12 + length
            }
            return "the file ends before its IEND chunk"
        case .jpeg:
            // After the first scan begins, FF D9 can only be the end-of-image marker (scan data
            // escapes FF); it may be followed by other data (Motion Photos append a video).
            var index = 2, sawScan = false
            while index + 1 < bytes.count {
                if bytes[index] == 0xFF {
                    if bytes[index + 1] == 0xDA { sawScan = true }
                    if bytes[index + 1] == 0xD9 && sawScan { return nil }
                }
                index += 1
            }
            return "the file ends before its end-of-image marker"
        case .webp:
            guard bytes.count >= 12 else { return "the file ends inside the RIFF header" }
            let declared = littleEndian(bytes, 4, 4) + 8
            return declared > bytes.count ? "the file is \(bytes.count) bytes; its RIFF header says \(declared)" : nil
        default:
            return nil
        }
    }

    /// How many top-level RIFF chunks called `name` a WebP file has.
    static func countChunks(_ name: String, in bytes: [UInt8]) -> Int {
        var offset = 12
        var count = 0
        while offset + 8 <= bytes.count {
            if bytes[offset..<(offset + 4)].elementsEqual(name.utf8) { count += 1 }
            let size = littleEndian(bytes, offset + 4, 4)
            offset += 8 + size + (size & 1)
        }
        return count
    }

    private static func littleEndian(_ bytes: [UInt8], _ offset: Int, _ count: Int) -> Int {
        var value = 0
        for index in (0..<count).reversed() { value = value << 8 | Int(bytes[offset + index]) }
        return value
    }

    /// Reads the logical screen and walks the blocks to count frames and find
    /// a transparent colour: every step consumes bytes, so a hostile file
    /// (endless extensions, absurd lengths) ends the walk at its last byte.
    private static func probeGIF(_ bytes: [UInt8]) throws(ProbeError) -> ImageHeader {
        guard bytes.count >= 13 else { throw .corrupt(.gif, "file ends inside the screen descriptor") }
        let width = littleEndian(bytes, 6, 2), height = littleEndian(bytes, 8, 2)
        guard width > 0, height > 0 else { throw .corrupt(.gif, "zero width or height") }
        var offset = 13
        if bytes[10] & 0x80 != 0 { offset += 3 << (Int(bytes[10] & 0x07) + 1) }
        var frames = 0
        var transparent = false
        /// Skips data sub-blocks up to and including the terminator; false when the file ends first.
        func skipSubBlocks() -> Bool {
            while offset < bytes.count {
                let size = Int(bytes[offset])
                offset += 1 + size
                if size == 0 { return offset <= bytes.count }
            }
            return false
        }
        walk: while offset < bytes.count {
            switch bytes[offset] {
            case 0x2C:  // image descriptor: a frame
                guard offset + 10 <= bytes.count else { throw .corrupt(.gif, "file ends inside frame \(frames + 1)") }
                let packed = bytes[offset + 9]
                offset += 10
                if packed & 0x80 != 0 { offset += 3 << (Int(packed & 0x07) + 1) }
                offset += 1  // LZW minimum code size
                guard offset <= bytes.count, skipSubBlocks() else { throw .corrupt(.gif, "file ends inside frame \(frames + 1)") }
                frames += 1
            case 0x21:  // extension
                guard offset + 2 <= bytes.count else { throw .corrupt(.gif, "file ends inside an extension") }
                // The first frame's transparent colour: later frames' ones usually let earlier frames show through.
                if frames == 0, bytes[offset + 1] == 0xF9, offset + 4 <= bytes.count, bytes[offset + 3] & 0x01 != 0 {
                    transparent = true
                }
                offset += 2
                guard skipSubBlocks() else { throw .corrupt(.gif, "file ends inside an extension") }
            case 0x3B:  // trailer
                break walk
            default:
                throw .corrupt(.gif, "unknown block 0x\(String(bytes[offset], radix: 16)) after frame \(frames)")
            }
        }
        guard frames > 0 else { throw .corrupt(.gif, "no frame") }
        return ImageHeader(format: .gif, width: width, height: height, frameCount: frames, hasAlpha: transparent)
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
            return try sized((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1, alpha: bits >> 28 & 1 == 1)
        default:
            guard bytes.count >= 30 else { throw .corrupt(.webp, "file ends inside the VP8X header") }
            let flags = bytes[20]
            let animated = flags & 0x02 != 0
            return try sized(littleEndian(bytes, 24, 3) + 1, littleEndian(bytes, 27, 3) + 1, alpha: flags & 0x10 != 0,
                             frames: animated ? max(1, countChunks("ANMF", in: bytes)) : 1)
        }
        func sized(_ width: Int, _ height: Int, alpha: Bool = false, frames: Int = 1) throws(ProbeError) -> ImageHeader {
            guard width > 0, height > 0 else { throw .corrupt(.webp, "zero width or height") }
            return ImageHeader(format: .webp, width: width, height: height, frameCount: frames, hasAlpha: alpha)
        }
    }
}
