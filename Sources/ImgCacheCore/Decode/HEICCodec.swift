import CImgCacheShims

extension ImageFormat {
    public static let heic = ImageFormat(declaring: "heic")
}

/// HEIC (HEVC in an ISO media file, what phones take): the header from its
/// boxes, decoded by libheif (grids and alpha included, upright).
struct HEICCodec: ImageCodec {
    let format = ImageFormat.heic
    let fileExtensions = ["heic"]
    let capabilities: CodecCapabilities = [.decode]
    let decodeMemoryFactor = 2.5

    /// Its own brands, or HEIF's generic ones with HEVC's among the compatible brands.
    func recognizes(_ bytes: [UInt8]) -> Bool {
        ISOMediaFile.isBranded(bytes, as: ["heic", "heix", "heim", "heis", "hevc", "hevx"])
    }

    func probe(_ bytes: [UInt8]) throws(ImageHeader.ProbeError) -> ImageHeader {
        try ISOMediaFile.header(bytes, format: format)
    }

    func missingEnd(of bytes: [UInt8]) -> String? { ISOMediaFile(bytes: bytes).missingEnd() }

    func decode(_ bytes: [UInt8], header: ImageHeader, maximumPixels: PixelLimit,
                maximumFrames: Int) throws(ImageDecoder.DecodeError) -> DecodedImage {
        try CodecShim.decode(bytes, header: header, maximumPixels: maximumPixels, maximumFrames: maximumFrames, ic_heif_decode)
    }
}
