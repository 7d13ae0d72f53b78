import CImgCacheShims

extension ImageFormat {
    public static let avif = ImageFormat(declaring: "avif")
}

/// AVIF, still or a sequence: the header from its boxes (upright: clean
/// aperture, rotation and mirror as browsers apply them), decoded by libavif
/// (every frame of a sequence) or, for files libavif's parser refuses, by
/// libheif; and written through libavif.
struct AVIFCodec: ImageCodec {
    let format = ImageFormat.avif
    let displayName = "AVIF"
    let fileExtensions = ["avif", "avifs"]
    let capabilities: CodecCapabilities = [.decode, .encode, .animation, .alpha, .quality]
    let decodeMemoryFactor = 2.5
    let encodeMemoryFactor = 4.0

    /// Its own brands, or HEIF's generic ones with AVIF's among the compatible brands.
    func recognizes(_ bytes: [UInt8]) -> Bool {
        ISOMediaFile.isBranded(bytes, as: ["avif", "avis"])
    }

    func probe(_ bytes: [UInt8]) throws(ImageHeader.ProbeError) -> ImageHeader {
        try ISOMediaFile.header(bytes, format: format)
    }

    func missingEnd(of bytes: [UInt8]) -> String? { ISOMediaFile(bytes: bytes).missingEnd() }

    func decode(_ bytes: [UInt8], header: ImageHeader, maximumPixels: PixelLimit,
                maximumFrames: Int) throws(ImageDecoder.DecodeError) -> DecodedImage {
        try CodecShim.decode(bytes, header: header, maximumPixels: maximumPixels, maximumFrames: maximumFrames, ic_avif_decode)
    }

    func encode(_ rgba: ArraySlice<UInt8>, width: Int, height: Int,
                settings: ImageEncoder.Settings) throws(ImageEncoder.EncodeError) -> [UInt8] {
        let opaque = ImageEncoder.isOpaque(rgba)
        return try CodecShim.encoded(format) { encoded, message, size in
            rgba.withUnsafeBufferPointer { buffer in
                ic_avif_encode(buffer.baseAddress, UInt32(width), UInt32(height), Int32(settings.lossless ? 100 : settings.quality),
                               opaque ? 0 : 1, encoded, message, size)
            }
        }
    }

    /// A sequence: every frame with its time (it loops: libavif 0.11 writes no play count).
    func encodeAnimation(_ frames: [UInt8], width: Int, height: Int, frameCount: Int, delays: [Int], loopCount: Int,
                         settings: ImageEncoder.Settings) throws(ImageEncoder.EncodeError) -> [UInt8] {
        let opaque = ImageEncoder.isOpaque(frames[...])
        let times = delays.map { UInt32(clamping: $0) }
        let sequence = try CodecShim.encoded(format) { encoded, message, size in
            frames.withUnsafeBufferPointer { buffer in
                times.withUnsafeBufferPointer { delays in
                    ic_avif_encode_animation(buffer.baseAddress, UInt32(width), UInt32(height), UInt32(frameCount), delays.baseAddress,
                                             Int32(settings.lossless ? 100 : settings.quality), opaque ? 0 : 1, encoded, message, size)
                }
            }
        }
        // libavif stamps the sequence with the time it was written: the same frames would make other
        // bytes every second (a site's copies rewritten, a data set's hashes changed). Zeroed.
        return ISOMediaFile.withoutCreationTimes(sequence)
    }
}
