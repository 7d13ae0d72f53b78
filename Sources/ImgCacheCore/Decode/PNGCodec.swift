import CImgCacheShims

extension ImageFormat {
    public static let png = ImageFormat(declaring: "png")
}

/// PNG through libpng: the header (and an APNG's frame count from its
/// `acTL` chunk), the chunks up to IEND (an APNG's frames against its
/// `acTL` and its canvas), decode (an APNG's every frame, `AnimatedPNG`),
/// and encode (an opaque image as RGB).
struct PNGCodec: ImageCodec {
    let format = ImageFormat.png
    let displayName = "PNG"
    let fileExtensions = ["png", "apng"]
    let capabilities: CodecCapabilities = [.decode, .encode, .alpha]
    let decodeMemoryFactor = 1.5
    let encodeMemoryFactor = 1.5

    func recognizes(_ bytes: [UInt8]) -> Bool {
        CodecShim.starts(bytes, with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
    }

    func probe(_ bytes: [UInt8]) throws(ImageHeader.ProbeError) -> ImageHeader {
        let header = try CodecShim.header(PNGCodec.headerChunks(bytes), format: format, ic_png_read_header)
        // A whole APNG's frames are held against its acTL and its canvas (read from the chunks, no pixel decoded).
        if let problem = PNGCodec.animationProblem(bytes) { throw .corrupt(format, problem) }
        var probed = ImageHeader(format: format, width: Int(header.width), height: Int(header.height),
                                 frameCount: PNGCodec.apngFrameCount(bytes) ?? 1, hasAlpha: header.has_alpha != 0,
                                 bitDepth: Int(header.bit_depth), orientation: PNGCodec.exifOrientation(bytes) ?? 1)
        probed.hasColourProfile = PNGCodec.hasColourProfile(bytes)
        return probed
    }

    /// What libpng needs to read the header: the signature, IHDR, PLTE and tRNS, then the start
    /// of an IDAT. Other chunks before the image data (text, profiles, private ones) are left
    /// out: a 300 MB `tEXt` chunk costs neither memory here nor the sight of the header when only
    /// the body's head is at hand.
    static func headerChunks(_ bytes: [UInt8]) -> [UInt8] {
        guard bytes.count >= 8 else { return bytes }
        var kept = Array(bytes[0..<8])
        var offset = 8
        let needed = ["IHDR", "PLTE", "tRNS"].map { Array($0.utf8) }
        while offset + 8 <= bytes.count {
            let length = CodecShim.bigEndian(bytes, offset)
            let type = Array(bytes[(offset + 4)..<(offset + 8)])
            // What libpng must judge itself: a bad length, the image data, a chunk it reads.
            guard length >= 0, length <= 0x7FFF_FFFF else { return kept + bytes[offset..<(offset + 8)] }
            if type.elementsEqual("IDAT".utf8) { return kept + bytes[offset..<(offset + 8)] }
            let end = offset + 12 + length
            if needed.contains(type) {
                guard end <= bytes.count else { return kept + bytes[offset...] }
                kept += bytes[offset..<end]
            } else if end > bytes.count {
                break
            }
            offset = end
        }
        // The head ends inside a chunk libpng does not need: the header is what came before it.
        return kept + [0, 0, 0, 0] + Array("IDAT".utf8)
    }

    /// The orientation in an `eXIf` chunk (PNG 1.5: before the image data).
    static func exifOrientation(_ bytes: [UInt8]) -> Int? {
        var offset = 8
        while offset + 12 <= bytes.count {
            let length = CodecShim.bigEndian(bytes, offset)
            let type = bytes[(offset + 4)..<(offset + 8)]
            guard length >= 0, length <= bytes.count - offset - 12 else { return nil }
            if type.elementsEqual("eXIf".utf8) { return ExifOrientation.orientation(inTIFF: bytes[(offset + 8)..<(offset + 8 + length)]) }
            if type.elementsEqual("IDAT".utf8) { return nil }
            offset += 12 + length
        }
        return nil
    }

    /// Whether an `iCCP` or `cICP` chunk precedes the image data.
    static func hasColourProfile(_ bytes: [UInt8]) -> Bool {
        var offset = 8
        while offset + 12 <= bytes.count {
            let length = CodecShim.bigEndian(bytes, offset)
            let type = bytes[(offset + 4)..<(offset + 8)]
            if type.elementsEqual("iCCP".utf8) || type.elementsEqual("cICP".utf8) { return true }
            if type.elementsEqual("IDAT".utf8) { return false }
            guard length >= 0, length <= bytes.count - offset - 12 else { return false }
            offset += 12 + length
        }
        return false
    }

    /// An APNG's frame count (nil for a plain PNG: no `acTL` before the first
    /// IDAT, or two of them, no frame at all, or other frames than `acTL` announces):
    /// the frames present when the chunks are there to the end; else what `acTL` announces.
    static func apngFrameCount(_ bytes: [UInt8]) -> Int? {
        var offset = 8
        var declared: Int?
        // Frames with data (an fcTL before any data replaces the one before it), and whether the
        // last fcTL seen has data yet.
        var present = 0, pending = false
        while offset + 12 <= bytes.count {
            let length = CodecShim.bigEndian(bytes, offset)
            let type = bytes[(offset + 4)..<(offset + 8)]
            if declared == nil {
                if type.elementsEqual("acTL".utf8), length >= 8, offset + 16 <= bytes.count {
                    declared = CodecShim.bigEndian(bytes, offset + 8)
                } else if type.elementsEqual("IDAT".utf8) {
                    return nil
                }
            } else if type.elementsEqual("acTL".utf8) {
                return nil
            }
            if type.elementsEqual("fcTL".utf8) {
                pending = true
            } else if pending, type.elementsEqual("IDAT".utf8) || (type.elementsEqual("fdAT".utf8) && length > 4) {
                present += 1
                pending = false
            } else if type.elementsEqual("IEND".utf8) {
                // Frames other than announced (none among them): a still, as Chromium shows it.
                return present == 0 || present != declared ? nil : present
            }
            guard length >= 0, length <= bytes.count else { break }
            offset += 12 + length
        }
        return declared.map { max(1, $0) }
    }

    /// Chunk by chunk to IEND; whatever follows it (rare) does not matter.
    func missingEnd(of bytes: [UInt8]) -> String? {
        var offset = 8
        while offset + 12 <= bytes.count {
            let length = CodecShim.bigEndian(bytes, offset)
            if bytes[(offset + 4)..<(offset + 8)].elementsEqual("IEND".utf8) { return nil }
            guard length >= 0, length <= bytes.count else { break }
            offset += 12 + length
        }
        return "the file ends before its IEND chunk"
    }

    /// What a whole APNG's chunks contradict (frames against `acTL`, frames outside the canvas), nil
    /// when nothing (or the file is not all there yet).
    static func animationProblem(_ bytes: [UInt8]) -> String? {
        do { _ = try AnimatedPNG(bytes) } catch {
            if case .corrupt(_, let reason) = error { return reason }
        }
        return nil
    }

    func decode(_ bytes: [UInt8], header: ImageHeader, maximumPixels: PixelLimit,
                maximumFrames: Int) throws(ImageDecoder.DecodeError) -> DecodedImage {
        if let animation = try AnimatedPNG(bytes) { return try animation.decode(maximumPixels: maximumPixels, maximumFrames: maximumFrames) }
        return try CodecShim.decode(bytes, header: header, maximumPixels: maximumPixels, maximumFrames: maximumFrames, ic_png_decode)
    }

    /// Images up to this many pixels are decoded whole for a thumbnail, so that its area
    /// averaging weighs every source pixel exactly; larger ones have their rows shrunk as they
    /// are read, for memory.
    static let exactlyAveragedPixels = 4 << 20

    /// Smaller where that keeps at least twice `size` (a large image): rows shrunk by a whole
    /// factor as they are read, so that a 100-megapixel PNG never needs its pixels in memory.
    func decode(_ bytes: [UInt8], header: ImageHeader, maximumPixels: PixelLimit, maximumFrames: Int,
                atLeast size: (width: Int, height: Int)) throws(ImageDecoder.DecodeError) -> DecodedImage {
        // An animation's frames are decoded whole: each is a region of the canvas.
        if let animation = try AnimatedPNG(bytes) { return try animation.decode(maximumPixels: maximumPixels, maximumFrames: maximumFrames) }
        guard header.width * header.height > PNGCodec.exactlyAveragedPixels else {
            return try CodecShim.decode(bytes, header: header, maximumPixels: maximumPixels, maximumFrames: maximumFrames, ic_png_decode)
        }
        // A whole factor at most half the reduction asked: the area averaging after it still does most of the work.
        let twice = (width: min(header.width, size.width * 2), height: min(header.height, size.height * 2))
        return try CodecShim.decode(bytes, header: header, maximumPixels: maximumPixels, maximumFrames: maximumFrames, atLeast: twice,
                                    ic_png_decode_reduced)
    }

    func encode(_ rgba: ArraySlice<UInt8>, width: Int, height: Int,
                settings: ImageEncoder.Settings) throws(ImageEncoder.EncodeError) -> [UInt8] {
        // What the picture is stays: an opaque image has no alpha channel.
        let opaque = ImageEncoder.isOpaque(rgba)
        let pixels = opaque ? ImageEncoder.withoutAlpha(rgba) : rgba
        return try CodecShim.encoded(format) { encoded, message, size in
            pixels.withUnsafeBufferPointer { buffer in
                ic_png_encode(buffer.baseAddress, UInt32(width), UInt32(height), opaque ? 3 : 4, encoded, message, size)
            }
        }
    }
}
