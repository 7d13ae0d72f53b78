extension ImageFormat {
    public static let heic = ImageFormat(declaring: "heic")
}

/// HEIC (HEVC in an ISO media file): recognised by its brand, not decoded here.
struct HEICCodec: ImageCodec {
    let format = ImageFormat.heic
    let fileExtensions = ["heic"]
    let capabilities: CodecCapabilities = []

    func recognizes(_ bytes: [UInt8]) -> Bool {
        ISOMediaBrand.major(of: bytes).map { ["heic", "heix", "heim", "heis", "hevc", "hevx"].contains($0) } ?? false
    }
}

/// The major brand of an ISO base media file (`ftyp` box first), which names
/// what HEIC, HEIF and AVIF files hold.
enum ISOMediaBrand {
    static func major(of bytes: [UInt8]) -> String? {
        guard CodecShim.starts(bytes, with: Array("ftyp".utf8), at: 4), bytes.count >= 12 else { return nil }
        return String(decoding: bytes[8..<12], as: UTF8.self)
    }
}
