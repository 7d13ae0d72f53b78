/// What is done to an image before it is stored, instead of storing the bytes
/// as served (SDWebImage's transformers): a thumbnail that fits a box, or a
/// downscaled copy of a large image (ScaleDownLargeImages), encoded in the
/// input's format or the one asked for.
public struct ImageTransform: Equatable, Sendable {
    /// `--thumbnail WxH`: fit inside the box, keeping the aspect ratio, never upscaling.
    public var thumbnail: BoxSize?
    /// `--scale-down[=PIXELS]`: images with more pixels are shrunk to fit it.
    public var scaleDownLimit: PixelLimit?
    /// `--format`: the output format; nil keeps the input's.
    public var format: ImageFormat?
    /// `--quality`, for JPEG and lossy WebP output.
    public var quality = ImageEncoder.Settings.defaultQuality
    /// `--background`: what transparent pixels become in JPEG, which has no alpha.
    public var background = RGBColor.white
    /// TransformAnimatedImage: an animation in a format imgcache cannot write
    /// animated becomes an animated WebP rather than its first frame. Every
    /// animation imgcache decodes frame by frame (GIF, WebP) already keeps its
    /// frames in its own format, so today this changes no output.
    public var transformsAnimations = false

    /// SDWebImage's default for ScaleDownLargeImages: 60 MB of RGBA8 at 4 bytes a pixel.
    public static let defaultScaleDownLimit = PixelLimit(pixels: 15_728_640)

    public init(thumbnail: BoxSize? = nil, scaleDownLimit: PixelLimit? = nil, format: ImageFormat? = nil) {
        self.thumbnail = thumbnail
        self.scaleDownLimit = scaleDownLimit
        self.format = format
    }

    /// A width and a height, as in `256x256`.
    public struct BoxSize: Equatable, Sendable, CustomStringConvertible {
        public let width: Int
        public let height: Int

        public init(width: Int, height: Int) {
            self.width = width
            self.height = height
        }

        /// Reads `WxH`, each from 1 to 65535.
        public init?(parsing text: String) {
            let parts = text.lowercased().split(separator: "x", omittingEmptySubsequences: false)
            guard parts.count == 2, let width = Int(parts[0]), let height = Int(parts[1]),
                  (1...65_535).contains(width), (1...65_535).contains(height) else { return nil }
            self.init(width: width, height: height)
        }

        public var description: String { "\(width)x\(height)" }
    }

    /// The transformer key: part of the cache key, so each transform of a URL
    /// is an entry of its own and the original is not needed again.
    public var key: String {
        var parts: [String] = []
        if let thumbnail { parts.append("thumbnail(\(thumbnail))") }
        if let scaleDownLimit { parts.append("scale-down(\(scaleDownLimit.pixels))") }
        if let format { parts.append("format(\(format.rawValue))") }
        let capabilities = format.map { CodecRegistry.codec(for: $0).capabilities }
        if capabilities?.contains(.quality) ?? true { parts.append("quality(\(quality))") }
        // A format without alpha flattens transparency: onto white unless told.
        if let capabilities, !capabilities.contains(.alpha) { parts.append("background(\(background))") }
        return parts.joined(separator: "-")
    }

    /// The cache key of `urlKey` transformed: the URL key, a line break (which
    /// no URL imgcache fetches may hold, so no URL's own key can collide), and
    /// the transformer key, then the Accept sent when it is not the default.
    public func cacheKey(for urlKey: String, accept: String? = nil) -> CacheKey {
        CacheKey(KeyVariant(transform: KeyVariant.transformPrefix + key, accept: accept).key(for: urlKey),
                 fileExtension: format?.fileExtension)
    }

    /// The size the transform gives an image of `width` × `height`.
    /// The size a vector image (SVG) is drawn at: `--thumbnail`'s box filled as
    /// far as its proportions allow (a vector loses nothing drawn larger), then
    /// as any image.
    public func drawingSize(width: Int, height: Int) -> (width: Int, height: Int) {
        guard let thumbnail, width > 0, height > 0 else { return targetSize(width: width, height: height) }
        let scale = min(Double(thumbnail.width) / Double(width), Double(thumbnail.height) / Double(height))
        return targetSize(width: max(1, min(thumbnail.width, Int((Double(width) * scale).rounded()))),
                          height: max(1, min(thumbnail.height, Int((Double(height) * scale).rounded()))))
    }

    public func targetSize(width: Int, height: Int) -> (width: Int, height: Int) {
        var size = (width: width, height: height)
        if let thumbnail {
            size = ImageResizer.fittedSize(width: size.width, height: size.height, boxWidth: thumbnail.width, boxHeight: thumbnail.height)
        }
        if let limit = scaleDownLimit, !limit.allows(width: size.width, height: size.height) {
            let scale = (Double(limit.pixels) / Double(size.width * size.height)).squareRoot()
            var shrunk = (width: max(1, Int(Double(size.width) * scale)), height: max(1, Int(Double(size.height) * scale)))
            while !limit.allows(width: shrunk.width, height: shrunk.height), shrunk.width * shrunk.height > 1 {
                shrunk = (max(1, shrunk.width - 1), max(1, shrunk.height - 1))
            }
            size = shrunk
        }
        return size
    }

    /// The format written for input of `input`'s format: `--format`, else the
    /// input's own; an animation in a format imgcache cannot write animated
    /// becomes an animated WebP with TransformAnimatedImage.
    public func outputFormat(for input: ImageFormat, animated: Bool = false) -> ImageFormat {
        if let format { return format }
        let own = ImageEncoder.writableFormats.contains(input) ? input : CodecRegistry.fallbackFormat
        if animated && transformsAnimations && !ImageEncoder.animatedFormats.contains(own), let animated = ImageEncoder.animatedFormats.first {
            return animated
        }
        return own
    }

    /// Whether an image of `format` with `frameCount` frames keeps every
    /// frame: an animation written in a format that animates (GIF, WebP).
    public func keepsFrames(of format: ImageFormat, frameCount: Int) -> Bool {
        frameCount > 1 && ImageEncoder.animatedFormats.contains(outputFormat(for: format, animated: true))
    }

    /// Whether an image is stored as served: its size needs no change and no
    /// other format was asked for (a GIF or an animation inside the box stays whole).
    public func keepsAsServed(width: Int, height: Int, format: ImageFormat, frameCount: Int) -> Bool {
        let size = targetSize(width: width, height: height)
        return size.width == width && size.height == height && (self.format == nil || self.format == format)
    }

    /// What a transform made.
    public struct Output: Sendable {
        public let bytes: [UInt8]
        public let width: Int
        public let height: Int
        public let format: ImageFormat
        public let frameCount: Int
    }

    /// Decodes `bytes` (of `header`) as this transform needs them: only the
    /// first frame unless the output keeps every frame, and a vector drawn at
    /// the size it is wanted at rather than drawn large and resampled.
    public func decodeSource(_ bytes: [UInt8], header: ImageHeader,
                             maximumPixels: PixelLimit) throws(ImageDecoder.DecodeError) -> DecodedImage {
        try ImageDecoder.decode(bytes, maximumPixels: maximumPixels,
                                maximumFrames: keepsFrames(of: header.format, frameCount: header.frameCount ?? 1) ? 0 : 1,
                                atLeast: header.format == .svg ? drawingSize(width: header.width, height: header.height) : nil)
    }

    /// Transforms `image` (every frame, when the output format animates; else
    /// its first) and encodes the result.
    public func apply(to decoded: DecodedImage) throws(ImageEncoder.EncodeError) -> Output {
        // Written in sRGB, whatever profile the source was in.
        let image: DecodedImage
        do { image = try decoded.inSRGB() } catch {
            switch error { case .libraryMissing(let message): throw .libraryMissing(message) }
        }
        let size = targetSize(width: image.width, height: image.height)
        let animated = keepsFrames(of: image.format, frameCount: image.frameCount)
        let format = outputFormat(for: image.format, animated: image.frameCount > 1)
        let settings = ImageEncoder.Settings(format: format, quality: quality, background: background)
        guard animated else {
            // Upright first (a JPEG's EXIF orientation), then fitted.
            let upright = ImageOrientation.apply(image.frame(0), width: image.width, height: image.height,
                                                 orientation: image.orientation)
            let fitted = targetSize(width: upright.width, height: upright.height)
            let pixels = ImageResizer.resize(upright.pixels[...], width: upright.width, height: upright.height,
                                             toWidth: fitted.width, toHeight: fitted.height)
            let bytes = try ImageEncoder.encode(pixels[...], width: fitted.width, height: fitted.height, settings: settings)
            return Output(bytes: bytes, width: fitted.width, height: fitted.height, format: format, frameCount: 1)
        }
        var frames: [UInt8] = []
        frames.reserveCapacity(size.width * size.height * 4 * image.frameCount)
        for index in 0..<image.frameCount {
            frames += ImageResizer.resize(image.frame(index), width: image.width, height: image.height,
                                          toWidth: size.width, toHeight: size.height)
        }
        let bytes = try ImageEncoder.encodeAnimation(frames, width: size.width, height: size.height, frameCount: image.frameCount,
                                                     // No loop count in the source means it plays once.
                                                     delays: image.delays, loopCount: image.loopCount ?? 1, settings: settings)
        return Output(bytes: bytes, width: size.width, height: size.height, format: format, frameCount: image.frameCount)
    }

    /// The media type of a format's files, for a transformed entry's metadata.
    static func mediaType(_ format: ImageFormat) -> String {
        format.mediaType
    }
}
