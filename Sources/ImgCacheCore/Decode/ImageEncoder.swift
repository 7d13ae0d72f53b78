import CImgCacheShims

/// Encodes RGBA8 pixels as PNG, JPEG, WebP or GIF through the C libraries,
/// for transformed images (thumbnails, downscaled copies). What the picture
/// is stays: an opaque image is written without an alpha channel, one with
/// alpha written as JPEG is flattened onto `Settings.background`, and GIF and
/// WebP keep an animation's frames.
public enum ImageEncoder {
    /// How to encode: the format and its quality settings.
    public struct Settings: Equatable, Sendable {
        public var format: ImageFormat
        /// 1–100, for JPEG and lossy WebP.
        public var quality: Int
        /// WebP only: lossless instead of lossy.
        public var lossless: Bool
        /// What transparent pixels become in a format without alpha (JPEG).
        public var background: RGBColor

        public static let defaultQuality = 85

        public init(format: ImageFormat, quality: Int = Settings.defaultQuality, lossless: Bool = false,
                    background: RGBColor = .white) {
            self.format = format
            self.quality = quality
            self.lossless = lossless
            self.background = background
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
    public static let writableFormats: [ImageFormat] = [.png, .jpeg, .webp, .gif]

    /// The formats imgcache writes animated.
    public static let animatedFormats: [ImageFormat] = [.webp, .gif]

    /// An animated WebP or GIF from `frameCount` frames of `width` × `height`
    /// RGBA8 pixels, one after another in `frames`, each shown for its `delays`
    /// entry (ms), played `loopCount` times (0: forever).
    public static func encodeAnimation(_ frames: [UInt8], width: Int, height: Int, frameCount: Int, delays: [Int],
                                       loopCount: Int, settings: Settings) throws(EncodeError) -> [UInt8] {
        precondition(frames.count == width * height * 4 * frameCount && delays.count == frameCount)
        guard animatedFormats.contains(settings.format) else { throw .unsupported(settings.format) }
        var encoded = ic_encoded()
        var message = [CChar](repeating: 0, count: 256)
        let times = delays.map { UInt32(max(0, $0)) }
        let status = frames.withUnsafeBufferPointer { buffer in
            times.withUnsafeBufferPointer { delays in
                settings.format == .gif
                    ? ic_gif_encode(buffer.baseAddress, UInt32(width), UInt32(height), UInt32(frameCount), delays.baseAddress,
                                    Int32(loopCount), &encoded, &message, message.count)
                    : ic_webp_encode_animation(buffer.baseAddress, UInt32(width), UInt32(height), UInt32(frameCount), delays.baseAddress,
                                               Int32(loopCount), Int32(settings.quality), settings.lossless ? 1 : 0,
                                               &encoded, &message, message.count)
            }
        }
        guard status == 0 else {
            let text = String(decoding: message.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if text.hasPrefix("cannot load") { throw .libraryMissing(text) }
            throw .failed(settings.format, text)
        }
        defer { ic_encoded_free(&encoded) }
        return [UInt8](UnsafeBufferPointer(start: encoded.bytes, count: encoded.size))
    }

    /// `rgba` holds `width` × `height` pixels, 4 bytes each.
    public static func encode(_ rgba: ArraySlice<UInt8>, width: Int, height: Int, settings: Settings) throws(EncodeError) -> [UInt8] {
        precondition(rgba.count == width * height * 4, "pixel buffer does not match the size")
        if settings.format == .gif {
            return try encodeAnimation(Array(rgba), width: width, height: height, frameCount: 1, delays: [0], loopCount: 1, settings: settings)
        }
        let opaque = isOpaque(rgba)
        // PNG: an opaque image as RGB; JPEG: alpha flattened onto the background (it has no alpha).
        var pixels = rgba
        var channels: Int32 = 4
        if settings.format == .png, opaque {
            pixels = withoutAlpha(rgba)
            channels = 3
        } else if settings.format == .jpeg, !opaque {
            pixels = flattened(rgba, onto: settings.background)
        }
        var encoded = ic_encoded()
        var message = [CChar](repeating: 0, count: 256)
        let status: Int32 = pixels.withUnsafeBufferPointer { buffer in
            let (w, h) = (UInt32(width), UInt32(height))
            switch settings.format {
            case .png: return ic_png_encode(buffer.baseAddress, w, h, channels, &encoded, &message, message.count)
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

    /// Whether every pixel is fully opaque.
    static func isOpaque(_ rgba: ArraySlice<UInt8>) -> Bool {
        rgba.withUnsafeBufferPointer { buffer in
            var index = 3
            while index < buffer.count {
                if buffer[index] != 255 { return false }
                index += 4
            }
            return true
        }
    }

    /// The RGB bytes of RGBA pixels.
    private static func withoutAlpha(_ rgba: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var rgb = [UInt8](repeating: 0, count: rgba.count / 4 * 3)
        rgba.withUnsafeBufferPointer { source in
            rgb.withUnsafeMutableBufferPointer { target in
                for pixel in 0..<(source.count / 4) {
                    target[pixel * 3] = source[pixel * 4]
                    target[pixel * 3 + 1] = source[pixel * 4 + 1]
                    target[pixel * 3 + 2] = source[pixel * 4 + 2]
                }
            }
        }
        return rgb[...]
    }

    /// RGBA pixels composited onto an opaque `background` (alpha then 255).
    static func flattened(_ rgba: ArraySlice<UInt8>, onto background: RGBColor) -> ArraySlice<UInt8> {
        var out = Array(rgba)
        let fill = [UInt32(background.red), UInt32(background.green), UInt32(background.blue)]
        out.withUnsafeMutableBufferPointer { pixels in
            for pixel in stride(from: 0, to: pixels.count, by: 4) {
                let alpha = UInt32(pixels[pixel + 3])
                guard alpha != 255 else { continue }
                for channel in 0..<3 {
                    let value = UInt32(pixels[pixel + channel]) * alpha + fill[channel] * (255 - alpha)
                    pixels[pixel + channel] = UInt8((value + 127) / 255)
                }
                pixels[pixel + 3] = 255
            }
        }
        return out[...]
    }
}
