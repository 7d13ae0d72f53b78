extension ImageFormat {
    public static let bmp = ImageFormat(declaring: "bmp")
}

/// BMP: recognised and named, not decoded here.
struct BMPCodec: ImageCodec {
    let format = ImageFormat.bmp
    let fileExtensions = ["bmp"]
    let capabilities: CodecCapabilities = []

    /// `BM`, then a BITMAPFILEHEADER whose DIB header has one of the sizes its versions have.
    func recognizes(_ bytes: [UInt8]) -> Bool {
        guard CodecShim.starts(bytes, with: Array("BM".utf8)), bytes.count >= 18 else { return false }
        return [12, 40, 52, 56, 64, 108, 124].contains(CodecShim.littleEndian(bytes, 14, 4))
    }
}
