import CImgCacheShims

/// Decodes every pixel of every frame through the C libraries (libpng,
/// libjpeg-turbo, libwebp with its demux API, giflib): SDWebImageCodersManager's
/// decoders. The pixel limit is checked from the header first and again by the
/// C side before each allocation, counting every frame.
public enum ImageDecoder {
    /// Why the pixels could not be had.
    public enum DecodeError: Error, Equatable, Sendable, CustomStringConvertible {
        case notAnImage
        case unsupported(ImageFormat)
        case corrupt(ImageFormat, String)
        case tooManyPixels(width: Int, height: Int, limit: PixelLimit)
        case libraryMissing(String)

        public var description: String {
            switch self {
            case .notAnImage: return "not an image"
            case .unsupported(let format): return "\(format.displayName) images are not supported"
            case .corrupt(let format, let reason): return "corrupt \(format.displayName) image: \(reason)"
            case .tooManyPixels(let width, let height, let limit): return "\(width)×\(height) pixels is over the limit of \(limit)"
            case .libraryMissing(let message): return message
            }
        }
    }

    private typealias CDecoder = (UnsafePointer<UInt8>?, Int, UInt64, UInt32, UnsafeMutablePointer<ic_decoded_image>?,
                                  UnsafeMutablePointer<CChar>?, Int) -> Int32

    /// Decodes `bytes`, refusing images over `maximumPixels` (all frames counted) before decoding;
    /// an animation stops after `maximumFrames` frames (0: every frame).
    public static func decode(_ bytes: [UInt8], maximumPixels: PixelLimit = .standard,
                              maximumFrames: Int = 0) throws(DecodeError) -> DecodedImage {
        let header: ImageHeader
        do {
            header = try ImageHeader.probe(bytes)
        } catch {
            switch error {
            case .notAnImage: throw .notAnImage
            case .unsupported(let format): throw .unsupported(format)
            case .corrupt(let format, let reason): throw .corrupt(format, reason)
            case .libraryMissing(let message): throw .libraryMissing(message)
            }
        }
        guard maximumPixels.allows(width: header.width, height: header.height) else {
            throw .tooManyPixels(width: header.width, height: header.height, limit: maximumPixels)
        }
        let decoder: CDecoder
        switch header.format {
        case .png: decoder = ic_png_decode
        case .jpeg: decoder = ic_jpeg_decode
        case .webp: decoder = ic_webp_decode
        case .gif: decoder = ic_gif_decode
        default: throw .unsupported(header.format)
        }
        var image = ic_decoded_image()
        var message = [CChar](repeating: 0, count: 256)
        let status = bytes.withUnsafeBufferPointer { buffer in
            decoder(buffer.baseAddress, buffer.count, UInt64(maximumPixels.pixels), UInt32(max(0, maximumFrames)),
                    &image, &message, message.count)
        }
        guard status == 0 else {
            let text = String(decoding: message.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if text.hasPrefix("cannot load") { throw .libraryMissing(text) }
            if text.hasPrefix("more pixels than the limit") {
                throw .tooManyPixels(width: header.width, height: header.height, limit: maximumPixels)
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
                            orientation: header.format == .jpeg ? ExifOrientation.read(bytes) ?? 1 : 1)
    }
}
