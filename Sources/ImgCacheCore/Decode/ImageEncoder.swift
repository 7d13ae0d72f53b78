import CImgCacheShims

/// Encodes RGBA8 pixels as PNG, JPEG or WebP through the C libraries, for
/// transformed images (thumbnails, downscaled copies).
public enum ImageEncoder {
    /// How to encode: the format and its quality settings.
    public struct Settings: Equatable, Sendable {
        public var format: ImageFormat
        /// 1–100, for JPEG and lossy WebP.
        public var quality: Int
        /// WebP only: lossless instead of lossy.
        public var lossless: Bool

        public static let defaultQuality = 85

        public init(format: ImageFormat, quality: Int = Settings.defaultQuality, lossless: Bool = false) {
            self.format = format
            self.quality = quality
            self.lossless = lossless
        }
    }

    /// Why pixels could not be encoded.
    public enum EncodeError: Error, Equatable, Sendable, CustomStringConvertible {
        case unsupported(ImageFormat)
        case failed(ImageFormat, String)
        case libraryMissing(String)

        public var description: String {
            switch self {
            case .unsupported(let format): return "imgcache does not write \(format.displayName) images"
            case .failed(let format, let reason): return "cannot encode \(format.displayName): \(reason)"
            case .libraryMissing(let message): return message
            }
        }
    }

    /// The formats imgcache writes.
    public static let writableFormats: [ImageFormat] = [.png, .jpeg, .webp]

    /// An animated WebP from `frameCount` frames of `width` × `height` RGBA8
    /// pixels, one after another in `frames`, each shown for its `delays` entry (ms).
    public static func encodeAnimation(_ frames: [UInt8], width: Int, height: Int, frameCount: Int, delays: [Int],
                                       loopCount: Int, settings: Settings) throws(EncodeError) -> [UInt8] {
        precondition(frames.count == width * height * 4 * frameCount && delays.count == frameCount)
        guard settings.format == .webp else { throw .unsupported(settings.format) }
        var encoded = ic_encoded()
        var message = [CChar](repeating: 0, count: 256)
        let times = delays.map { UInt32(max(0, $0)) }
        let status = frames.withUnsafeBufferPointer { buffer in
            times.withUnsafeBufferPointer { delays in
                ic_webp_encode_animation(buffer.baseAddress, UInt32(width), UInt32(height), UInt32(frameCount), delays.baseAddress,
                                         Int32(loopCount), Int32(settings.quality), settings.lossless ? 1 : 0,
                                         &encoded, &message, message.count)
            }
        }
        guard status == 0 else {
            let text = String(decoding: message.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if text.hasPrefix("cannot load") { throw .libraryMissing(text) }
            throw .failed(.webp, text)
        }
        defer { ic_encoded_free(&encoded) }
        return [UInt8](UnsafeBufferPointer(start: encoded.bytes, count: encoded.size))
    }

    /// `rgba` holds `width` × `height` pixels, 4 bytes each.
    public static func encode(_ rgba: ArraySlice<UInt8>, width: Int, height: Int, settings: Settings) throws(EncodeError) -> [UInt8] {
        precondition(rgba.count == width * height * 4, "pixel buffer does not match the size")
        var encoded = ic_encoded()
        var message = [CChar](repeating: 0, count: 256)
        let status: Int32 = rgba.withUnsafeBufferPointer { buffer in
            let (w, h) = (UInt32(width), UInt32(height))
            switch settings.format {
            case .png: return ic_png_encode(buffer.baseAddress, w, h, &encoded, &message, message.count)
            case .jpeg: return ic_jpeg_encode(buffer.baseAddress, w, h, Int32(settings.quality), &encoded, &message, message.count)
            case .webp:
                return ic_webp_encode(buffer.baseAddress, w, h, Int32(settings.quality), settings.lossless ? 1 : 0,
                                      &encoded, &message, message.count)
            default: return -2
            }
        }
        if status == -2 { throw .unsupported(settings.format) }
        guard status == 0 else {
            let text = String(decoding: message.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if text.hasPrefix("cannot load") { throw .libraryMissing(text) }
            throw .failed(settings.format, text)
        }
        defer { ic_encoded_free(&encoded) }
        return [UInt8](UnsafeBufferPointer(start: encoded.bytes, count: encoded.size))
    }
}
