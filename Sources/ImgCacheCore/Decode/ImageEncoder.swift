/// Encodes RGBA8 pixels, through the codec of the format asked for, for
/// transformed images (thumbnails, downscaled copies). What the picture is
/// stays: an opaque image is written without an alpha channel where the
/// format allows, one with alpha written in a format without it is flattened
/// onto `Settings.background`, and formats that animate keep the frames.
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

        /// The quality a format is written at unless told: 85, but AVIF 70, where its files are as
        /// small as WebP's at about the same SSIM (Docs/PERFORMANCE.md measures it; at 85 AVIF is
        /// near lossless and the heaviest of the three, twice WebP's bytes).
        public static func defaultQuality(for format: ImageFormat?) -> Int { format == .avif ? 70 : defaultQuality }

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
    public static var writableFormats: [ImageFormat] { CodecRegistry.writableFormats }

    /// The formats imgcache writes animated.
    public static var animatedFormats: [ImageFormat] { CodecRegistry.animatedFormats }

    /// An animation from `frameCount` frames of `width` × `height` RGBA8
    /// pixels, one after another in `frames`, each shown for its `delays`
    /// entry (ms), played `loopCount` times (0: forever), in a format that animates.
    public static func encodeAnimation(_ frames: [UInt8], width: Int, height: Int, frameCount: Int, delays: [Int],
                                       loopCount: Int, settings: Settings) throws(EncodeError) -> [UInt8] {
        precondition(frames.count == width * height * 4 * frameCount && delays.count == frameCount)
        let codec = CodecRegistry.codec(for: settings.format)
        guard codec.capabilities.contains(.animation) else { throw .unsupported(settings.format) }
        return try codec.encodeAnimation(frames, width: width, height: height, frameCount: frameCount,
                                         delays: delays.map(shownDelay), loopCount: loopCount, settings: settings)
    }

    /// How long a frame given `delay` ms is shown, in every format written: 10 ms or less (a GIF's
    /// 0, an APNG's 0/100) is 100 ms, as browsers play it; the rest as given.
    public static func shownDelay(_ delay: Int) -> Int { delay <= 10 ? 100 : delay }

    /// `rgba` holds `width` × `height` pixels, 4 bytes each.
    /// The widest and highest picture `format` can hold and be read back: what
    /// its encoder (JPEG 65500, WebP 16383) or the common readers (AVIF 32768,
    /// libavif's and libheif's limit) allow.
    public static func maximumSide(of format: ImageFormat) -> Int {
        switch format {
        case .jpeg: return 65_500
        case .webp: return 16_383
        case .avif: return 32_768
        case .gif: return 65_535
        case .jxl: return 262_144
        default: return Int(Int32.max)
        }
    }

    public static func encode(_ rgba: ArraySlice<UInt8>, width: Int, height: Int, settings: Settings) throws(EncodeError) -> [UInt8] {
        precondition(rgba.count == width * height * 4, "pixel buffer does not match the size")
        let codec = CodecRegistry.codec(for: settings.format)
        guard codec.capabilities.contains(.encode) else { throw .unsupported(settings.format) }
        return try codec.encode(rgba, width: width, height: height, settings: settings)
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
    static func withoutAlpha(_ rgba: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
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
