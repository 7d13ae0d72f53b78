/// Decodes every pixel of every frame through the format's codec:
/// SDWebImageCodersManager's decoders. The pixel limit is checked from the header first and again by the
/// C side before each allocation, counting every frame.
public enum ImageDecoder {
    /// Why the pixels could not be had.
    public enum DecodeError: Error, Equatable, Sendable, CustomStringConvertible {
        case notAnImage
        case unsupported(ImageFormat)
        case corrupt(ImageFormat, String)
        /// More pixels than the limit: `frames` frames of `width` × `height` (every frame decoded
        /// counts), or an SVG of `width` × `height` with the images it embeds.
        case tooManyPixels(width: Int, height: Int, limit: PixelLimit, frames: Int = 1, embedded: ImageHeader.EmbeddedImages? = nil)
        case libraryMissing(String)

        public var description: String {
            switch self {
            case .notAnImage: return "not an image"
            case .unsupported(let format): return "\(format.displayName) images are not supported"
            case .corrupt(let format, let reason): return "corrupt \(format.displayName) image: \(reason)"
            case .tooManyPixels(let width, let height, let limit, let frames, let embedded):
                return "\(PixelLimit.counted(width: width, height: height, frames: frames, embedded: embedded)) is over the limit of \(limit)"
            case .libraryMissing(let message): return message
            }
        }
    }

    /// Decodes `bytes`, refusing images over `maximumPixels` (all frames counted) before decoding;
    /// an animation stops after `maximumFrames` frames (0: every frame).
    /// With `atLeast`, a format that can decode smaller (or draw at any size:
    /// SVG) does, to no less than that width and height.
    public static func decode(_ bytes: [UInt8], maximumPixels: PixelLimit = .standard,
                              maximumFrames: Int = 0, atLeast size: (width: Int, height: Int)? = nil) throws(DecodeError) -> DecodedImage {
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
        guard maximumPixels.allows(header) else {
            throw .tooManyPixels(width: header.codedWidth, height: header.codedHeight, limit: maximumPixels, embedded: header.embedded)
        }
        // Every frame decoded counts: an animation's frames together, refused before the first is decoded.
        let frames = maximumFrames == 0 ? header.frameCount ?? 1 : min(maximumFrames, header.frameCount ?? 1)
        if frames > 1 {
            let (area, wide) = header.codedWidth.multipliedReportingOverflow(by: header.codedHeight)
            let (total, long) = area.multipliedReportingOverflow(by: frames)
            if wide || long || total > maximumPixels.pixels {
                throw .tooManyPixels(width: header.codedWidth, height: header.codedHeight, limit: maximumPixels, frames: frames)
            }
        }
        let codec = CodecRegistry.codec(for: header.format)
        if let size {
            return try codec.decode(bytes, header: header, maximumPixels: maximumPixels, maximumFrames: maximumFrames, atLeast: size)
        }
        return try codec.decode(bytes, header: header, maximumPixels: maximumPixels, maximumFrames: maximumFrames)
    }
}
