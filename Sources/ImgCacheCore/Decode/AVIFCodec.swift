extension ImageFormat {
    public static let avif = ImageFormat(declaring: "avif")
}

/// AVIF, still or a sequence: recognised by its brand, not decoded here.
struct AVIFCodec: ImageCodec {
    let format = ImageFormat.avif
    let fileExtensions = ["avif"]
    let capabilities: CodecCapabilities = []

    func recognizes(_ bytes: [UInt8]) -> Bool {
        ISOMediaBrand.major(of: bytes).map { ["avif", "avis"].contains($0) } ?? false
    }
}
