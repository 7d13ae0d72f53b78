import CImgCacheShims

extension ImageFormat {
    public static let jpeg = ImageFormat(declaring: "jpeg")
}

/// JPEG through libjpeg-turbo: the header and its EXIF orientation, the end
/// of the image after its first scan, decode (with DCT scaling), and encode
/// (transparency flattened onto the background: JPEG has no alpha).
struct JPEGCodec: ImageCodec {
    let format = ImageFormat.jpeg
    let displayName = "JPEG"
    let fileExtensions = ["jpg", "jpeg", "jpe", "jfif"]
    let capabilities: CodecCapabilities = [.decode, .encode, .quality]
    let decodeMemoryFactor = 1.5
    let encodeMemoryFactor = 1.0

    func recognizes(_ bytes: [UInt8]) -> Bool {
        CodecShim.starts(bytes, with: [0xFF, 0xD8, 0xFF])
    }

    func probe(_ bytes: [UInt8]) throws(ImageHeader.ProbeError) -> ImageHeader {
        let header = try CodecShim.header(bytes, format: format, ic_jpeg_read_header)
        var probed = ImageHeader(format: format, width: Int(header.width), height: Int(header.height), frameCount: 1,
                                 hasAlpha: false, bitDepth: Int(header.bit_depth), orientation: ExifOrientation.read(bytes) ?? 1)
        probed.hasColourProfile = JPEGSegments(bytes).hasColourProfile(in: bytes)
        return probed
    }

    /// After the first scan begins, FF D9 can only be the end-of-image marker
    /// (scan data escapes FF); it may be followed by other data (Motion Photos append a video).
    /// The first scan is found by walking the segments before it: an EXIF thumbnail's scan and
    /// end marker, inside APP1, are not the image's.
    func missingEnd(of bytes: [UInt8]) -> String? {
        guard let scan = JPEGSegments(bytes).firstScan else { return "the file ends before its first scan" }
        // An end-of-image marker anywhere after the first start of scan, searched in C
        // (memmem): this runs on every JPEG downloaded.
        let found = bytes.withUnsafeBufferPointer { (all: UnsafeBufferPointer<UInt8>) -> Bool in
            guard let base = all.baseAddress else { return false }
            if all.count >= 2, all[all.count - 2] == 0xFF, all[all.count - 1] == 0xD9, all.count - 2 > scan { return true }
            return ic_jpeg_find_marker(base, all.count, scan + 2, 0xD9) >= 0
        }
        return found ? nil : "the file ends before its end-of-image marker"
    }

    func decode(_ bytes: [UInt8], header: ImageHeader, maximumPixels: PixelLimit,
                maximumFrames: Int) throws(ImageDecoder.DecodeError) -> DecodedImage {
        try CodecShim.decode(bytes, header: header, maximumPixels: maximumPixels, maximumFrames: maximumFrames, ic_jpeg_decode)
    }

    /// Smaller where that keeps at least `size`: DCT scaling, 1/8 to 8/8.
    func decode(_ bytes: [UInt8], header: ImageHeader, maximumPixels: PixelLimit, maximumFrames: Int,
                atLeast size: (width: Int, height: Int)) throws(ImageDecoder.DecodeError) -> DecodedImage {
        try CodecShim.decode(bytes, header: header, maximumPixels: maximumPixels, maximumFrames: maximumFrames, atLeast: size, ic_jpeg_decode_reduced)
    }

    func encode(_ rgba: ArraySlice<UInt8>, width: Int, height: Int,
                settings: ImageEncoder.Settings) throws(ImageEncoder.EncodeError) -> [UInt8] {
        let pixels = ImageEncoder.isOpaque(rgba) ? rgba : ImageEncoder.flattened(rgba, onto: settings.background)
        return try CodecShim.encoded(format) { encoded, message, size in
            pixels.withUnsafeBufferPointer { buffer in
                ic_jpeg_encode(buffer.baseAddress, UInt32(width), UInt32(height), Int32(settings.quality), encoded, message, size)
            }
        }
    }
}
