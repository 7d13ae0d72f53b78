import CImgCacheShims

extension ImageFormat {
    public static let heif = ImageFormat(declaring: "heif")
}

/// HEIF under its generic brands (`mif1`, `mif2`, `msf1`, `miaf`): the header from its
/// boxes, decoded by libheif whatever coding it holds (HEVC, AV1, JPEG).
struct HEIFCodec: ImageCodec {
    let format = ImageFormat.heif
    let displayName = "HEIF"
    let fileExtensions = ["heif", "hif"]
    let capabilities: CodecCapabilities = [.decode]
    let decodeMemoryFactor = 2.5

    /// A generic brand whose compatible brands name no coding imgcache tells apart (AVIF and HEIC come first).
    func recognizes(_ bytes: [UInt8]) -> Bool {
        ISOMediaFile.majorBrand(of: bytes).map(ISOMediaFile.genericBrands.contains) ?? false
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
