extension ImageFormat {
    public static let tiff = ImageFormat(declaring: "tiff")
}

/// TIFF, either byte order: recognised and named, not decoded here.
struct TIFFCodec: ImageCodec {
    let format = ImageFormat.tiff
    let fileExtensions = ["tiff", "tif"]
    let capabilities: CodecCapabilities = []

    func recognizes(_ bytes: [UInt8]) -> Bool {
        CodecShim.starts(bytes, with: [0x49, 0x49, 0x2A, 0x00]) || CodecShim.starts(bytes, with: [0x4D, 0x4D, 0x00, 0x2A])
    }
}
