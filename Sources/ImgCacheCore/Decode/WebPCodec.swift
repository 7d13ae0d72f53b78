import CImgCacheShims

extension ImageFormat {
    public static let webp = ImageFormat(declaring: "webp")
}

/// WebP through libwebp (its demux API for animations): the VP8, VP8L or
/// VP8X header read here, the RIFF size, decode, and encode, still or animated.
struct WebPCodec: ImageCodec {
    let format = ImageFormat.webp
    let displayName = "WebP"
    let fileExtensions = ["webp"]
    let capabilities: CodecCapabilities = [.decode, .encode, .animation, .alpha, .quality]
    let decodeMemoryFactor = 1.5
    let encodeMemoryFactor = 2.0

    func recognizes(_ bytes: [UInt8]) -> Bool {
        CodecShim.starts(bytes, with: Array("RIFF".utf8)) && CodecShim.starts(bytes, with: Array("WEBP".utf8), at: 8)
            && ["VP8 ", "VP8L", "VP8X"].contains { CodecShim.starts(bytes, with: Array($0.utf8), at: 12) }
    }

    func probe(_ bytes: [UInt8]) throws(ImageHeader.ProbeError) -> ImageHeader {
        let chunk = String(decoding: bytes[12..<16], as: UTF8.self)
        let le = { (offset: Int, count: Int) in CodecShim.littleEndian(bytes, offset, count) }
        switch chunk {
        case "VP8 ":
            // Frame tag (3 bytes), start code 9D 01 2A, then 14-bit width and height.
            guard bytes.count >= 30, bytes[23] == 0x9D, bytes[24] == 0x01, bytes[25] == 0x2A else {
                throw .corrupt(format, "bad VP8 start code")
            }
            return try sized(le(26, 2) & 0x3FFF, le(28, 2) & 0x3FFF)
        case "VP8L":
            guard bytes.count >= 25, bytes[20] == 0x2F else { throw .corrupt(format, "bad VP8L signature") }
            let bits = le(21, 4)
            return try sized((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1, alpha: bits >> 28 & 1 == 1)
        default:
            guard bytes.count >= 30 else { throw .corrupt(format, "file ends inside the VP8X header") }
            let flags = bytes[20]
            let animated = flags & 0x02 != 0
            let orientation = flags & 0x08 != 0 ? WebPCodec.exifOrientation(bytes) : nil
            var header = try sized(le(24, 3) + 1, le(27, 3) + 1, alpha: flags & 0x10 != 0,
                                   frames: animated ? max(1, WebPCodec.countChunks("ANMF", in: bytes)) : 1, orientation: orientation ?? 1)
            header.hasColourProfile = flags & 0x20 != 0
            return header
        }
        func sized(_ width: Int, _ height: Int, alpha: Bool = false, frames: Int = 1,
                   orientation: Int = 1) throws(ImageHeader.ProbeError) -> ImageHeader {
            guard width > 0, height > 0 else { throw .corrupt(format, "zero width or height") }
            return ImageHeader(format: format, width: width, height: height, frameCount: frames, hasAlpha: alpha, orientation: orientation)
        }
    }

    /// The orientation in the `EXIF` chunk an extended WebP's flags announce (usually after the image data).
    static func exifOrientation(_ bytes: [UInt8]) -> Int? {
        chunk("EXIF", in: bytes).flatMap { ExifOrientation.orientation(inTIFF: $0) }
    }

    /// The payload of the first top-level RIFF chunk called `name`, when it is whole.
    static func chunk(_ name: String, in bytes: [UInt8]) -> ArraySlice<UInt8>? {
        var offset = 12
        while offset + 8 <= bytes.count {
            let size = CodecShim.littleEndian(bytes, offset + 4, 4)
            guard size <= bytes.count - offset - 8 else { return nil }
            if bytes[offset..<(offset + 4)].elementsEqual(name.utf8) { return bytes[(offset + 8)..<(offset + 8 + size)] }
            offset += 8 + size + (size & 1)
        }
        return nil
    }

    /// How many top-level RIFF chunks called `name` a WebP file has.
    static func countChunks(_ name: String, in bytes: [UInt8]) -> Int {
        var offset = 12
        var count = 0
        while offset + 8 <= bytes.count {
            if bytes[offset..<(offset + 4)].elementsEqual(name.utf8) { count += 1 }
            let size = CodecShim.littleEndian(bytes, offset + 4, 4)
            offset += 8 + size + (size & 1)
        }
        return count
    }

    func missingEnd(of bytes: [UInt8]) -> String? {
        guard bytes.count >= 12 else { return "the file ends inside the RIFF header" }
        let declared = CodecShim.littleEndian(bytes, 4, 4) + 8
        return declared > bytes.count ? "the file is \(bytes.count) bytes; its RIFF header says \(declared)" : nil
    }

    func decode(_ bytes: [UInt8], header: ImageHeader, maximumPixels: PixelLimit,
                maximumFrames: Int) throws(ImageDecoder.DecodeError) -> DecodedImage {
        withProfile(try CodecShim.decode(bytes, header: header, maximumPixels: maximumPixels, maximumFrames: maximumFrames,
                                         ic_webp_decode), of: bytes)
    }

    /// A still image smaller where that keeps at least `size`: libwebp's scaled decoding, straight to that size
    /// (an image with alpha, up to 4 megapixels, whole).
    func decode(_ bytes: [UInt8], header: ImageHeader, maximumPixels: PixelLimit, maximumFrames: Int,
                atLeast size: (width: Int, height: Int)) throws(ImageDecoder.DecodeError) -> DecodedImage {
        // An image with alpha up to PNG's size for exact averaging is decoded whole: libwebp's
        // scaler weighs pixels across an edge, so a thumbnail column of clear pixels alone came out
        // partly opaque; the resizer's area averaging keeps hard edges of alpha where they are.
        guard header.frameCount ?? 1 == 1, !(header.hasAlpha && header.width * header.height <= PNGCodec.exactlyAveragedPixels) else {
            return try decode(bytes, header: header, maximumPixels: maximumPixels, maximumFrames: maximumFrames)
        }
        return withProfile(try CodecShim.decode(bytes, header: header, maximumPixels: maximumPixels, maximumFrames: maximumFrames,
                                                atLeast: size, ic_webp_decode_reduced), of: bytes)
    }

    /// An extended WebP's ICCP chunk (flag 0x20) says what colours its pixels are in; libwebp hands them back as stored.
    private func withProfile(_ decoded: DecodedImage, of bytes: [UInt8]) -> DecodedImage {
        var image = decoded
        if bytes.count > 20, bytes[12..<16].elementsEqual("VP8X".utf8), bytes[20] & 0x20 != 0,
           let profile = WebPCodec.chunk("ICCP", in: bytes), !profile.isEmpty {
            image.colour = .profile(Array(profile))
        }
        return image
    }

    func encode(_ rgba: ArraySlice<UInt8>, width: Int, height: Int,
                settings: ImageEncoder.Settings) throws(ImageEncoder.EncodeError) -> [UInt8] {
        // libwebp writes no alpha chunk for an opaque picture.
        try CodecShim.encoded(format) { encoded, message, size in
            rgba.withUnsafeBufferPointer { buffer in
                ic_webp_encode(buffer.baseAddress, UInt32(width), UInt32(height), Int32(settings.quality), settings.lossless ? 1 : 0,
                               encoded, message, size)
            }
        }
    }

    func encodeAnimation(_ frames: [UInt8], width: Int, height: Int, frameCount: Int, delays: [Int], loopCount: Int,
                         settings: ImageEncoder.Settings) throws(ImageEncoder.EncodeError) -> [UInt8] {
        let times = delays.map { UInt32(max(0, $0)) }
        return try CodecShim.encoded(format) { encoded, message, size in
            frames.withUnsafeBufferPointer { buffer in
                times.withUnsafeBufferPointer { delays in
                    ic_webp_encode_animation(buffer.baseAddress, UInt32(width), UInt32(height), UInt32(frameCount), delays.baseAddress,
                                             Int32(loopCount), Int32(settings.quality), settings.lossless ? 1 : 0, encoded, message, size)
                }
            }
        }
    }
}
