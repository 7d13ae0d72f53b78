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
    /// Makes an image's placeholder (`--placeholders`): its dominant colour and
    /// ThumbHash, from the image fitted in 100x100, and a WebP of it at most 32
    /// pixels a side; the first frame of an animation.
    public var makesPlaceholder = false

    /// The transform making an image's placeholder.
    public static var placeholder: ImageTransform {
        var transform = ImageTransform(thumbnail: BoxSize(width: ThumbHash.largestSide, height: ThumbHash.largestSide), format: .webp)
        transform.quality = ImagePlaceholder.previewQuality
        transform.makesPlaceholder = true
        return transform
    }

    /// SDWebImage's default for ScaleDownLargeImages: 60 MB of RGBA8 at 4 bytes a pixel.
    public static let defaultScaleDownLimit = PixelLimit(pixels: 15_728_640)

    public init(thumbnail: BoxSize? = nil, scaleDownLimit: PixelLimit? = nil, format: ImageFormat? = nil) {
        self.thumbnail = thumbnail
        self.scaleDownLimit = scaleDownLimit
        self.format = format
    }

    /// `--fit`: how an image meets a `WxH` box.
    public enum Fit: String, CaseIterable, Equatable, Sendable {
        /// Inside the box, its proportions kept (one side may be shorter).
        case inside
        /// Fills the box, its proportions kept, the overflow cropped from the centre: exactly WxH.
        case cover
        /// Inside the box, then padded to exactly WxH (`--background`, else transparent).
        case contain
        /// Stretched to exactly WxH.
        case fill
        /// Over the box, its proportions kept, nothing cropped: the short side meets the box (img2dataset's `keep_ratio`).
        case outside
    }

    /// `--fit`; `.inside` is the default.
    public var fit = Fit.inside
    /// `--upscale`: an image smaller than the box is enlarged to it.
    public var upscale = false
    /// `--background` when given: what `contain` pads with (transparent when nil, white where there is no alpha).
    public var padding: RGBColor?
    /// Which part of the picture `cover` keeps, and where `contain` places it: the centre by default.
    public var gravity = Gravity.centre
    /// `contain` pads to exactly the box, also around an image smaller than it (imgproxy's
    /// `extend`); without it, a small image gets the smallest picture of the box's shape around it.
    public var padsToBox = false
    /// The image is always decoded and encoded again, even where its bytes as served would do:
    /// no metadata (EXIF, GPS) of the source is kept, and the quality asked applies.
    public var reencodes = false

    /// Where a picture sits in a box of another shape: its centre, a side or a corner.
    public enum Gravity: String, CaseIterable, Equatable, Sendable {
        case centre, north, south, east, west, northEast = "north-east", northWest = "north-west",
             southEast = "south-east", southWest = "south-west"

        /// The picture's share of the room left over, across and down: 0 at the left or top, 1 at the right or bottom.
        var weights: (x: Int, y: Int) {
            switch self {
            case .centre: return (1, 1)
            case .north: return (1, 0)
            case .south: return (1, 2)
            case .east: return (2, 1)
            case .west: return (0, 1)
            case .northEast: return (2, 0)
            case .northWest: return (0, 0)
            case .southEast: return (2, 2)
            case .southWest: return (0, 2)
            }
        }

        /// Where a side of `inner` starts in one of `outer` (negative: cropped), in halves of the room left (0, 1 or 2).
        static func start(inner: Int, outer: Int, weight: Int) -> Int { (outer - inner) * weight / 2 }
    }

    /// A width and a height, as in `256x256`; either may be left out (`256x`, `x256`).
    public struct BoxSize: Equatable, Sendable, CustomStringConvertible {
        /// Nil: as wide as the height allows.
        public let width: Int?
        /// Nil: as tall as the width allows.
        public let height: Int?

        public init(width: Int?, height: Int?) {
            self.width = width
            self.height = height
        }

        /// Reads `WxH`, `Wx` or `xH`, each from 1 to 65535.
        public init?(parsing text: String) {
            let parts = text.lowercased().split(separator: "x", omittingEmptySubsequences: false)
            guard parts.count == 2, !(parts[0].isEmpty && parts[1].isEmpty) else { return nil }
            func side(_ part: Substring) -> Int?? {
                if part.isEmpty { return .some(nil) }
                guard part.allSatisfy(\.isASCII), let value = Int(part), (1...65_535).contains(value) else { return nil }
                return .some(value)
            }
            guard let width = side(parts[0]), let height = side(parts[1]) else { return nil }
            self.init(width: width, height: height)
        }

        /// Both sides given.
        public var isComplete: Bool { width != nil && height != nil }

        public var description: String { "\(width.map(String.init) ?? "")x\(height.map(String.init) ?? "")" }

        /// The scale that brings `width` x `height` inside the box (`cover`: over it).
        func scale(width: Int, height: Int, covering: Bool) -> Double {
            let across = self.width.map { Double($0) / Double(width) }
            let down = self.height.map { Double($0) / Double(height) }
            switch (across, down) {
            case let (across?, down?): return covering ? max(across, down) : min(across, down)
            case let (across?, nil): return across
            case let (nil, down?): return down
            case (nil, nil): return 1
            }
        }
    }

    /// The transformer key: part of the cache key, so each transform of a URL
    /// is an entry of its own and the original is not needed again.
    public var key: String {
        if makesPlaceholder { return "placeholder(1)" }
        var parts: [String] = []
        if let thumbnail { parts.append("thumbnail(\(thumbnail))") }
        if thumbnail != nil, fit != .inside { parts.append("fit(\(fit.rawValue))") }
        if thumbnail != nil, upscale { parts.append("upscale") }
        if thumbnail != nil, fit == .contain { parts.append("padding(\(padding.map(\.description) ?? "none"))") }
        if thumbnail != nil, fit == .cover || fit == .contain, gravity != .centre { parts.append("gravity(\(gravity.rawValue))") }
        if thumbnail != nil, fit == .contain, padsToBox { parts.append("exact") }
        if reencodes { parts.append("reencode") }
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
    /// The size a vector image (SVG) is drawn at: the size it is laid out at,
    /// so that it is drawn once, sharp, at the size shown (larger than its own
    /// only with `--upscale`, as any image).
    public func drawingSize(width: Int, height: Int) -> (width: Int, height: Int) {
        layout(width: width, height: height).scaled
    }

    /// How an image of `width` x `height` is laid out: resized to `scaled`, then
    /// placed on a `canvas`-sized picture at `offset` (negative: cropped; positive: padded).
    public struct Layout: Equatable, Sendable {
        public let scaled: (width: Int, height: Int)
        public let canvas: (width: Int, height: Int)
        public let offset: (x: Int, y: Int)

        public static func == (a: Layout, b: Layout) -> Bool {
            a.scaled == b.scaled && a.canvas == b.canvas && a.offset == b.offset
        }
    }

    /// What `cover` crops `scaled` to: the box, or, when the image (not enlarged) is smaller than
    /// it, the largest picture of the box's shape inside it: every size of one box shape keeps
    /// that shape, so a srcset of them never switches crops.
    static func coverCanvas(scaled: (width: Int, height: Int), box: (width: Int, height: Int)) -> (width: Int, height: Int) {
        guard scaled.width < box.width || scaled.height < box.height else { return box }
        let ratio = min(Double(scaled.width) / Double(box.width), Double(scaled.height) / Double(box.height))
        return (max(1, min(scaled.width, Int((Double(box.width) * ratio).rounded()))),
                max(1, min(scaled.height, Int((Double(box.height) * ratio).rounded()))))
    }

    /// What `contain` pads `scaled` to: the box, or, when the image (not enlarged) leaves room on
    /// every side, the smallest picture of the box's shape around it: every size of one box shape
    /// then holds the image at the same size, so a srcset of them never shows it smaller or larger.
    static func containCanvas(scaled: (width: Int, height: Int), box: (width: Int, height: Int)) -> (width: Int, height: Int) {
        guard scaled.width < box.width && scaled.height < box.height else { return box }
        let ratio = max(Double(scaled.width) / Double(box.width), Double(scaled.height) / Double(box.height))
        return (min(box.width, max(scaled.width, Int((Double(box.width) * ratio).rounded()))),
                min(box.height, max(scaled.height, Int((Double(box.height) * ratio).rounded()))))
    }

    /// The layout the transform gives an image of `width` x `height` (as shown, upright).
    public func layout(width: Int, height: Int) -> Layout {
        var scaled = (width: width, height: height)
        var canvas: (width: Int, height: Int)?
        if let thumbnail {
            switch fit {
            case .fill where thumbnail.isComplete:
                scaled = (thumbnail.width!, thumbnail.height!)
            case .inside, .contain, .cover, .fill, .outside:
                var scale = thumbnail.scale(width: width, height: height, covering: fit == .cover || fit == .outside)
                if !upscale { scale = min(1, scale) }
                scaled = (max(1, Int((Double(width) * scale).rounded())), max(1, Int((Double(height) * scale).rounded())))
                // Rounding never takes a side past the box.
                if fit != .cover && fit != .outside {
                    scaled = (min(scaled.width, thumbnail.width ?? .max), min(scaled.height, thumbnail.height ?? .max))
                }
                if thumbnail.isComplete, fit == .cover {
                    canvas = ImageTransform.coverCanvas(scaled: scaled, box: (thumbnail.width!, thumbnail.height!))
                } else if thumbnail.isComplete, fit == .contain {
                    canvas = padsToBox ? (thumbnail.width!, thumbnail.height!)
                        : ImageTransform.containCanvas(scaled: scaled, box: (thumbnail.width!, thumbnail.height!))
                }
            }
        }
        if let limit = scaleDownLimit {
            let area = canvas ?? scaled
            if !limit.allows(width: area.width, height: area.height) {
                let shrink = ImageTransform.shrunk(area, within: limit)
                let factor = Double(shrink.width) / Double(area.width)
                scaled = (max(1, Int(Double(scaled.width) * factor)), max(1, Int(Double(scaled.height) * factor)))
                if canvas != nil { canvas = shrink } else { scaled = shrink }
            }
        }
        let finalCanvas = canvas ?? scaled
        let weights = gravity.weights
        return Layout(scaled: scaled, canvas: finalCanvas,
                      offset: (Gravity.start(inner: scaled.width, outer: finalCanvas.width, weight: weights.x),
                               Gravity.start(inner: scaled.height, outer: finalCanvas.height, weight: weights.y)))
    }

    /// `size` shrunk, proportions kept, until it is within `limit`.
    static func shrunk(_ size: (width: Int, height: Int), within limit: PixelLimit) -> (width: Int, height: Int) {
        let scale = (Double(limit.pixels) / Double(size.width * size.height)).squareRoot()
        var shrunk = (width: max(1, Int(Double(size.width) * scale)), height: max(1, Int(Double(size.height) * scale)))
        while !limit.allows(width: shrunk.width, height: shrunk.height), shrunk.width * shrunk.height > 1 {
            shrunk = (max(1, shrunk.width - 1), max(1, shrunk.height - 1))
        }
        return shrunk
    }

    /// The size of the picture the transform makes of an image of `width` × `height`.
    public func targetSize(width: Int, height: Int) -> (width: Int, height: Int) {
        layout(width: width, height: height).canvas
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

    /// The transform that makes the same bytes of an image in `input` (with `frameCount` frames)
    /// under another key: without `--format`, the one naming the format it writes (`--thumbnail
    /// 320x` of a JPEG is `--thumbnail 320x --format jpeg`), and the other way round; nil when
    /// there is none. The two share one entry rather than storing the same bytes twice.
    public func equivalent(for input: ImageFormat, frameCount: Int) -> ImageTransform? {
        if makesPlaceholder { return nil }
        let animated = frameCount > 1
        var other = self
        if format == nil {
            other.format = outputFormat(for: input, animated: animated)
            // Written in the input's own format only: a PNG made of a TIFF has no TIFF to stand for.
            guard other.format == input else { return nil }
        } else {
            other.format = nil
            guard format == input, other.outputFormat(for: input, animated: animated) == input else { return nil }
        }
        return other
    }

    /// Whether an image of `format` with `frameCount` frames keeps every
    /// frame: an animation written in a format that animates (GIF, WebP).
    public func keepsFrames(of format: ImageFormat, frameCount: Int) -> Bool {
        !makesPlaceholder && frameCount > 1 && ImageEncoder.animatedFormats.contains(outputFormat(for: format, animated: true))
    }

    /// Whether an image is stored as served: its size as shown (upright) needs no change, the
    /// format written would be its own (a format imgcache does not write becomes PNG), and its
    /// colours need no conversion (variants are sRGB), and it is upright as stored (no EXIF
    /// orientation to apply: browsers ignore it in a WebP, and a variant is upright whoever shows
    /// it): a GIF or an animation inside the box stays whole.
    public func keepsAsServed(_ header: ImageHeader) -> Bool {
        let shown = header.uprightSize
        let layout = layout(width: shown.width, height: shown.height)
        return !makesPlaceholder && !reencodes && layout.scaled == shown && layout.canvas == shown && header.orientation <= 1
            && outputFormat(for: header.format, animated: header.isAnimated) == header.format && !header.hasColourProfile
            // An animation written as PNG or JPEG XL is its first frame, fitting the box or not.
            && (!header.isAnimated || ImageEncoder.animatedFormats.contains(header.format))
    }

    /// What a transform made.
    public struct Output: Sendable {
        public let bytes: [UInt8]
        public let width: Int
        public let height: Int
        public let format: ImageFormat
        public let frameCount: Int
        /// What `ImageTransform.placeholder` found (its bytes are the preview).
        public var placeholder: ImagePlaceholder? = nil
    }

    /// Decodes `bytes` (of `header`) once for every transform of `transforms`:
    /// every frame if one keeps them, else the first, decoded no larger than
    /// the largest of them needs where the codec can (JPEG's DCT scaling,
    /// libwebp's scaled decoding, PNG rows shrunk as read; a vector drawn at
    /// that size). A still is decoded as a picture to be shown, damage the
    /// decoder can conceal concealed, unless `strict` (`--verify full`: every
    /// pixel decoded whole, damage refused). Pass the result to
    /// `apply(to:shown:)` with the source's upright size.
    public static func decodeSource(_ bytes: [UInt8], header: ImageHeader, for transforms: [ImageTransform],
                                    maximumPixels: PixelLimit, strict: Bool = false) throws(ImageDecoder.DecodeError) -> DecodedImage {
        let request = decodeRequest(header: header, for: transforms, strict: strict)
        return try ImageDecoder.decode(bytes, maximumPixels: maximumPixels, maximumFrames: request.keepsFrames ? 0 : 1, atLeast: request.atLeast)
    }

    /// What `decodeSource` decodes for `transforms`: every frame or the first, and the size the
    /// decode may shrink to (nil: whole).
    public struct DecodeRequest: Equatable, Sendable {
        public let keepsFrames: Bool
        public let atLeastWidth: Int?, atLeastHeight: Int?
        var atLeast: (width: Int, height: Int)? { atLeastWidth.flatMap { width in atLeastHeight.map { (width, $0) } } }
    }

    /// The decode `decodeSource` makes for `transforms`.
    public static func decodeRequest(header: ImageHeader, for transforms: [ImageTransform], strict: Bool) -> DecodeRequest {
        let frames = header.frameCount ?? 1
        let keepsFrames = transforms.contains { $0.keepsFrames(of: header.format, frameCount: frames) }
        var atLeast: (width: Int, height: Int)?
        if header.format == .svg {
            let sizes = transforms.map { $0.drawingSize(width: header.width, height: header.height) }
            atLeast = (sizes.map(\.width).max() ?? header.width, sizes.map(\.height).max() ?? header.height)
        } else if !keepsFrames, !strict {
            // As stored: a quarter turn swaps the sides.
            let shown = header.uprightSize
            let sizes = transforms.map { $0.layout(width: shown.width, height: shown.height).scaled }
            let needed = (width: sizes.map(\.width).max() ?? shown.width, height: sizes.map(\.height).max() ?? shown.height)
            let stored = header.orientation >= 5 ? (width: needed.height, height: needed.width) : needed
            atLeast = (min(stored.width, header.width), min(stored.height, header.height))
        }
        return DecodeRequest(keepsFrames: keepsFrames, atLeastWidth: atLeast?.width, atLeastHeight: atLeast?.height)
    }

    /// `decodeSource(_:header:for:maximumPixels:)` for this transform alone.
    public func decodeSource(_ bytes: [UInt8], header: ImageHeader,
                             maximumPixels: PixelLimit) throws(ImageDecoder.DecodeError) -> DecodedImage {
        try ImageTransform.decodeSource(bytes, header: header, for: [self], maximumPixels: maximumPixels)
    }

    /// The source's size for `apply(to:shown:)`: its upright size, but a vector's as drawn.
    public static func shownSize(of header: ImageHeader) -> (width: Int, height: Int)? {
        header.format == .svg ? nil : header.uprightSize
    }

    /// Transforms `image` (every frame, when the output format animates; else
    /// its first) and encodes the result.
    /// `shown` is the source's size as shown (upright) when `decoded` was decoded smaller: the
    /// layout is the full-size image's, so a reduced decode makes the same picture.
    /// `encoding` is told the format just before the encoder starts.
    public func apply(to decoded: DecodedImage, shown: (width: Int, height: Int)? = nil,
                      encoding: (ImageFormat) -> Void = { _ in }) throws(ImageEncoder.EncodeError) -> Output {
        // Written in sRGB, whatever profile the source was in.
        let image: DecodedImage
        do { image = try decoded.inSRGB() } catch {
            switch error { case .libraryMissing(let message): throw .libraryMissing(message) }
        }
        let animated = keepsFrames(of: image.format, frameCount: image.frameCount)
        let format = outputFormat(for: image.format, animated: image.frameCount > 1)
        let settings = ImageEncoder.Settings(format: format, quality: quality, background: background)
        guard animated else {
            // Upright first (a JPEG's EXIF orientation), then laid out.
            let upright = ImageOrientation.apply(image.frame(0), width: image.width, height: image.height,
                                                 orientation: image.orientation)
            let layout = layout(width: shown?.width ?? upright.width, height: shown?.height ?? upright.height)
            let pixels = shaped(upright.pixels[...], width: upright.width, height: upright.height, layout: layout)
            if makesPlaceholder {
                return try placeholder(of: pixels, width: layout.canvas.width, height: layout.canvas.height, settings: settings,
                                       encoding: encoding)
            }
            encoding(format)
            let bytes = try ImageEncoder.encode(pixels[...], width: layout.canvas.width, height: layout.canvas.height, settings: settings)
            return Output(bytes: bytes, width: layout.canvas.width, height: layout.canvas.height, format: format, frameCount: 1)
        }
        // Every frame upright too (an EXIF orientation in a WebP or PNG animation), then laid out.
        let turns = image.orientation >= 5
        let layout = layout(width: turns ? image.height : image.width, height: turns ? image.width : image.height)
        let size = layout.canvas
        var frames: [UInt8] = []
        frames.reserveCapacity(size.width * size.height * 4 * image.frameCount)
        for index in 0..<image.frameCount {
            let upright = ImageOrientation.apply(image.frame(index), width: image.width, height: image.height, orientation: image.orientation)
            frames += shaped(upright.pixels[...], width: upright.width, height: upright.height, layout: layout)
        }
        encoding(format)
        let bytes = try ImageEncoder.encodeAnimation(frames, width: size.width, height: size.height, frameCount: image.frameCount,
                                                     // No loop count in the source means it plays once.
                                                     delays: image.delays, loopCount: image.loopCount ?? 1, settings: settings)
        // The frames as written: an encoder merges identical frames into one longer one (libwebp does).
        let written = (try? ImageHeader.probe(bytes))?.frameCount ?? image.frameCount
        return Output(bytes: bytes, width: size.width, height: size.height, format: format, frameCount: written)
    }

    /// The placeholder of `pixels` (fitted in 100x100): its colour and ThumbHash, and its preview as bytes.
    private func placeholder(of pixels: [UInt8], width: Int, height: Int, settings: ImageEncoder.Settings,
                             encoding: (ImageFormat) -> Void) throws(ImageEncoder.EncodeError) -> Output {
        let found = ImagePlaceholder(of: pixels[...], width: width, height: height)
        let box = BoxSize(width: ImagePlaceholder.previewSide, height: ImagePlaceholder.previewSide)
        let scale = min(1, box.scale(width: width, height: height, covering: false))
        let preview = (width: max(1, Int((Double(width) * scale).rounded())), height: max(1, Int((Double(height) * scale).rounded())))
        let small = ImageResizer.resize(pixels[...], width: width, height: height, toWidth: preview.width, toHeight: preview.height)
        encoding(settings.format)
        let bytes = try ImageEncoder.encode(small[...], width: preview.width, height: preview.height, settings: settings)
        return Output(bytes: bytes, width: preview.width, height: preview.height, format: settings.format, frameCount: 1, placeholder: found)
    }

    /// One frame resized as `layout` says and placed on its canvas: cropped (cover) or padded (contain).
    func shaped(_ frame: ArraySlice<UInt8>, width: Int, height: Int, layout: Layout) -> [UInt8] {
        let resized = layout.scaled == (width, height) ? Array(frame)
            : ImageResizer.resize(frame, width: width, height: height, toWidth: layout.scaled.width, toHeight: layout.scaled.height)
        guard layout.canvas != layout.scaled else { return resized }
        let fill: [UInt8] = padding.map { [$0.red, $0.green, $0.blue, 255] } ?? [0, 0, 0, 0]
        return ImageResizer.placed(resized, width: layout.scaled.width, height: layout.scaled.height,
                                   canvasWidth: layout.canvas.width, canvasHeight: layout.canvas.height,
                                   x: layout.offset.x, y: layout.offset.y, fill: fill)
    }
}
