extension ImageFormat {
    public static let heif = ImageFormat(declaring: "heif")
}

/// HEIF of another coding than HEVC: recognised by its brand, not decoded here.
struct HEIFCodec: ImageCodec {
    let format = ImageFormat.heif
    let displayName = "HEIF"
    let fileExtensions = ["heif"]
    let capabilities: CodecCapabilities = []

    func recognizes(_ bytes: [UInt8]) -> Bool {
        ISOMediaBrand.major(of: bytes).map { ["mif1", "msf1", "heif"].contains($0) } ?? false
    }
}
