extension ImageFormat {
    public static let ico = ImageFormat(declaring: "ico")
}

/// Windows icons and cursors (ICO, CUR): the largest picture of the
/// directory (then the deepest), a PNG decoded by the PNG codec or a DIB
/// whose 1-bit AND mask makes its transparent pixels.
struct ICOCodec: ImageCodec {
    let format = ImageFormat.ico
    let displayName = "ICO"
    let fileExtensions = ["ico", "cur"]
    let mediaType = "image/x-icon"
    let capabilities: CodecCapabilities = [.decode]
    let decodeMemoryFactor = 2.0

    /// Reserved 0, type 1 (icon) or 2 (cursor), at least one entry, the first of a plausible size and
    /// place (past the directory's first entry); how many the directory lists is the probe's to judge.
    func recognizes(_ bytes: [UInt8]) -> Bool {
        guard bytes.count >= 22, bytes[0] == 0, bytes[1] == 0, [1, 2].contains(bytes[2]), bytes[3] == 0 else { return false }
        let count = CodecShim.littleEndian(bytes, 4, 2)
        guard count > 0 else { return false }
        let first = entries(bytes).first
        return first.map { $0.offset >= 22 && $0.size > 0 && bytes[9] == 0 } ?? false
    }

    /// The most pictures a directory may list (icons hold a handful; 255 is the most a one-byte
    /// count of the older tools allowed).
    static let maximumEntries = 1024

    /// What is wrong with the directory itself, before any picture is read.
    private func directoryProblem(_ bytes: [UInt8]) -> String? {
        let count = CodecShim.littleEndian(bytes, 4, 2)
        if count > ICOCodec.maximumEntries { return "its directory lists \(count) pictures, more than the \(ICOCodec.maximumEntries) imgcache reads" }
        if let first = entries(bytes).first, first.offset < 6 + 16 * count {
            return "its directory of \(count) pictures overlaps the first picture (at byte \(first.offset))"
        }
        return nil
    }

    private struct Entry {
        let width: Int
        let height: Int
        let bits: Int
        let size: Int
        let offset: Int
    }

    private func entries(_ bytes: [UInt8]) -> [Entry] {
        let count = CodecShim.littleEndian(bytes, 4, 2)
        return (0..<count).compactMap { index in
            let at = 6 + index * 16
            guard at + 16 <= bytes.count else { return nil }
            return Entry(width: bytes[at] == 0 ? 256 : Int(bytes[at]), height: bytes[at + 1] == 0 ? 256 : Int(bytes[at + 1]),
                         bits: CodecShim.littleEndian(bytes, at + 6, 2), size: CodecShim.littleEndian(bytes, at + 8, 4),
                         offset: CodecShim.littleEndian(bytes, at + 12, 4))
        }
    }

    /// The picture shown: the largest, then the one with the most colours.
    private func chosen(_ bytes: [UInt8]) throws(ImageHeader.ProbeError) -> Entry {
        guard let entry = entries(bytes).max(by: { ($0.width * $0.height, $0.bits) < ($1.width * $1.height, $1.bits) }) else {
            throw .corrupt(format, "no picture in its directory")
        }
        return entry
    }

    func probe(_ bytes: [UInt8]) throws(ImageHeader.ProbeError) -> ImageHeader {
        if let problem = directoryProblem(bytes) { throw .corrupt(format, problem) }
        let entry = try chosen(bytes)
        guard entry.offset + 16 <= bytes.count else {
            // The directory's sizes, until the picture itself arrives.
            return ImageHeader(format: format, width: entry.width, height: entry.height, frameCount: 1, hasAlpha: true)
        }
        let data = Array(bytes[entry.offset..<min(bytes.count, entry.offset + entry.size)])
        if PNGCodec().recognizes(data) {
            let png = try PNGCodec().probe(data)
            return ImageHeader(format: format, width: png.width, height: png.height, frameCount: 1, hasAlpha: png.hasAlpha)
        }
        let bitmap = try DeviceIndependentBitmap(bytes, at: entry.offset, pixelsAt: 0, format: format,
                                                 rows: try dibRows(bytes, entry))
        return ImageHeader(format: format, width: bitmap.width, height: bitmap.height, frameCount: 1, hasAlpha: true)
    }

    /// A DIB in an icon counts its AND mask's rows in its height.
    private func dibRows(_ bytes: [UInt8], _ entry: Entry) throws(ImageHeader.ProbeError) -> Int {
        guard entry.offset + 12 <= bytes.count else { throw .corrupt(format, "the file ends inside a picture") }
        let declared = abs(Int(Int32(truncatingIfNeeded: CodecShim.littleEndian(bytes, entry.offset + 8, 4))))
        return declared / 2
    }

    func missingEnd(of bytes: [UInt8]) -> String? {
        for entry in entries(bytes) where entry.offset + entry.size > bytes.count {
            return "the file is \(bytes.count) bytes; a picture runs to \(entry.offset + entry.size)"
        }
        return nil
    }

    func decode(_ bytes: [UInt8], header: ImageHeader, maximumPixels: PixelLimit,
                maximumFrames: Int) throws(ImageDecoder.DecodeError) -> DecodedImage {
        let entry: Entry
        do { entry = try chosen(bytes) } catch { throw .corrupt(format, "no picture in its directory") }
        guard entry.offset + entry.size <= bytes.count, entry.size > 0 else { throw .corrupt(format, "the file ends inside a picture") }
        // A directory that understates a bitmap's size (some writers put its header's alone) is read to the file's end.
        let end = entry.size < 40 ? bytes.count : entry.offset + entry.size
        let data = Array(bytes[entry.offset..<end])
        if PNGCodec().recognizes(data) {
            let png = try ImageDecoder.decode(data, maximumPixels: maximumPixels, maximumFrames: 1)
            return DecodedImage(format: format, width: png.width, height: png.height, frameCount: 1, pixels: png.pixels,
                                delays: [0], loopCount: nil, orientation: 1)
        }
        let bitmap: DeviceIndependentBitmap
        do {
            bitmap = try DeviceIndependentBitmap(data, at: 0, pixelsAt: 0, format: format, rows: try dibRows(bytes, entry))
        } catch {
            throw .corrupt(format, "\(error)")
        }
        guard maximumPixels.allows(width: bitmap.width, height: bitmap.height) else {
            throw .tooManyPixels(width: bitmap.width, height: bitmap.height, limit: maximumPixels)
        }
        var pixels = try bitmap.rgba(data)
        // Below the colour rows, a 1-bit mask: set bits are transparent (unless the pixels carry their own alpha).
        let maskStride = (bitmap.width + 31) / 32 * 4
        let maskAt = bitmap.pixelEnd
        if bitmap.bitsPerPixel < 32 || !pixels.enumerated().contains(where: { $0.offset % 4 == 3 && $0.element != 255 }),
           maskAt + maskStride * bitmap.height <= data.count {
            for row in 0..<bitmap.height {
                let source = maskAt + (bitmap.height - 1 - row) * maskStride
                for column in 0..<bitmap.width where data[source + column / 8] & (0x80 >> (column % 8)) != 0 {
                    pixels[(row * bitmap.width + column) * 4 + 3] = 0
                }
            }
        }
        return DecodedImage(format: format, width: bitmap.width, height: bitmap.height, frameCount: 1, pixels: pixels,
                            delays: [0], loopCount: nil, orientation: 1)
    }
}
