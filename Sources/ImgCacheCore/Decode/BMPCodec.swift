extension ImageFormat {
    public static let bmp = ImageFormat(declaring: "bmp")
}

/// BMP, decoded here: 1, 4 and 8-bit palettes, 16, 24 and 32-bit pixels
/// (bit fields included), bottom-up or top-down. RLE compression is refused.
struct BMPCodec: ImageCodec {
    let format = ImageFormat.bmp
    let fileExtensions = ["bmp", "dib"]
    let capabilities: CodecCapabilities = [.decode]
    let decodeMemoryFactor = 1.5

    /// `BM`, then a BITMAPFILEHEADER whose DIB header has one of the sizes its versions have.
    func recognizes(_ bytes: [UInt8]) -> Bool {
        guard CodecShim.starts(bytes, with: Array("BM".utf8)), bytes.count >= 18 else { return false }
        return [12, 40, 52, 56, 64, 108, 124].contains(CodecShim.littleEndian(bytes, 14, 4))
    }

    func probe(_ bytes: [UInt8]) throws(ImageHeader.ProbeError) -> ImageHeader {
        let bitmap = try DeviceIndependentBitmap(bytes, at: 14, pixelsAt: bytes.count >= 14 ? CodecShim.littleEndian(bytes, 10, 4) : 0,
                                                 format: format)
        return ImageHeader(format: format, width: bitmap.width, height: bitmap.height, frameCount: 1,
                           hasAlpha: bitmap.mayHaveAlpha, bitDepth: 8)
    }

    /// The file header says the file's size; the pixel rows say it again.
    func missingEnd(of bytes: [UInt8]) -> String? {
        guard let bitmap = try? DeviceIndependentBitmap(bytes, at: 14, pixelsAt: CodecShim.littleEndian(bytes, 10, 4), format: format) else {
            return "the header is not whole"
        }
        return bitmap.pixelEnd > bytes.count ? "the file is \(bytes.count) bytes; its pixels run to \(bitmap.pixelEnd)" : nil
    }

    func decode(_ bytes: [UInt8], header: ImageHeader, maximumPixels: PixelLimit,
                maximumFrames: Int) throws(ImageDecoder.DecodeError) -> DecodedImage {
        let bitmap: DeviceIndependentBitmap
        do {
            bitmap = try DeviceIndependentBitmap(bytes, at: 14, pixelsAt: CodecShim.littleEndian(bytes, 10, 4), format: format)
        } catch {
            throw .corrupt(format, "\(error)")
        }
        guard maximumPixels.allows(width: bitmap.width, height: bitmap.height) else {
            throw .tooManyPixels(width: bitmap.width, height: bitmap.height, limit: maximumPixels)
        }
        let pixels = try bitmap.rgba(bytes)
        return DecodedImage(format: format, width: bitmap.width, height: bitmap.height, frameCount: 1, pixels: pixels,
                            delays: [0], loopCount: nil, orientation: 1)
    }
}

/// A BMP's pixels as BITMAPINFOHEADER (and its later versions) describe
/// them, whether after a file header (BMP) or inside an icon.
struct DeviceIndependentBitmap {
    let format: ImageFormat
    let width: Int
    let height: Int
    /// Rows stored top first (a negative height).
    let topDown: Bool
    let bitsPerPixel: Int
    let palette: [(UInt8, UInt8, UInt8)]
    /// Red, green, blue, alpha masks for 16 and 32-bit pixels.
    let masks: [UInt32]
    let pixelsAt: Int
    let stride: Int
    /// RLE8 or RLE4 compressed rows (4 or 8 bits a pixel), their size in bytes.
    let runLengthSize: Int?
    /// Where the pixel rows end.
    var pixelEnd: Int { pixelsAt + (runLengthSize ?? stride * height) }
    /// 32-bit pixels with an alpha mask, or whose unused fourth byte may be alpha.
    var mayHaveAlpha: Bool { bitsPerPixel == 32 && masks[3] != 0 }

    /// `headerAt`: where the DIB header starts; `pixelsAt`: where its rows start (0: right after its palette).
    /// `rows`: an icon's own height (its DIB header counts the AND mask's rows too).
    /// 32-bit pixels without bit fields carry alpha in their unused byte when
    /// any pixel sets it (as Chrome reads them; icons rely on it), else are opaque.
    init(_ bytes: [UInt8], at headerAt: Int, pixelsAt: Int, format: ImageFormat, rows: Int? = nil) throws(ImageHeader.ProbeError) {
        self.format = format
        func le(_ offset: Int, _ count: Int) throws(ImageHeader.ProbeError) -> Int {
            guard offset >= 0, offset + count <= bytes.count else { throw .corrupt(format, "the file ends inside its header") }
            return CodecShim.littleEndian(bytes, offset, count)
        }
        let headerSize = try le(headerAt, 4)
        var compression = 0, colours = 0
        if headerSize == 12 {
            width = try le(headerAt + 4, 2)
            let signed = try le(headerAt + 6, 2)
            height = rows ?? signed
            topDown = false
            bitsPerPixel = try le(headerAt + 10, 2)
        } else {
            guard headerSize >= 40 else { throw .corrupt(format, "unknown header size \(headerSize)") }
            // Signed, as the format declares it: a negative width is said as such.
            width = Int(Int32(truncatingIfNeeded: try le(headerAt + 4, 4)))
            let signed = Int(Int32(truncatingIfNeeded: try le(headerAt + 8, 4)))
            topDown = signed < 0
            height = rows ?? abs(signed)
            bitsPerPixel = try le(headerAt + 14, 2)
            compression = try le(headerAt + 16, 4)
            colours = try le(headerAt + 32, 4)
        }
        guard width > 0 else { throw .corrupt(format, width < 0 ? "a negative width (\(width))" : "a width of 0") }
        guard height > 0 else { throw .corrupt(format, "a height of 0") }
        guard width <= 1 << 20, height <= 1 << 20 else {
            throw .corrupt(format, "\(width)×\(height) is beyond what BMP readers take (1048576 pixels a side)")
        }
        guard [1, 4, 8, 16, 24, 32].contains(bitsPerPixel) else { throw .corrupt(format, "\(bitsPerPixel) bits a pixel") }
        switch compression {
        case 0:
            masks = bitsPerPixel == 16 ? [0x7C00, 0x03E0, 0x001F, 0]
                : [0xFF0000, 0xFF00, 0xFF, bitsPerPixel == 32 ? 0xFF00_0000 : 0]
        case 3, 6:
            // Masks follow a 40-byte header (or sit inside a longer one), alpha's only in V4+ or ALPHABITFIELDS.
            let count = headerSize >= 56 || compression == 6 ? 4 : 3
            masks = try (0..<count).map { (index: Int) throws(ImageHeader.ProbeError) -> UInt32 in
                UInt32(try le(headerAt + 40 + index * 4, 4))
            } + (count == 3 ? [0] : [])
        case 1, 2:
            guard bitsPerPixel == (compression == 1 ? 8 : 4), !topDown else {
                throw .corrupt(format, "RLE\(compression == 1 ? 8 : 4) with \(bitsPerPixel) bits a pixel")
            }
            masks = [0, 0, 0, 0]
        default: throw .corrupt(format, "compression \(compression) is not supported")
        }
        var paletteEntries: [(UInt8, UInt8, UInt8)] = []
        if bitsPerPixel <= 8 {
            let count = colours > 0 ? min(colours, 1 << bitsPerPixel) : 1 << bitsPerPixel
            let entrySize = headerSize == 12 ? 3 : 4
            let paletteAt = headerAt + headerSize + (compression == 3 && headerSize == 40 ? 12 : 0)
            for index in 0..<count {
                let at = paletteAt + index * entrySize
                guard at + 3 <= bytes.count else { break }
                paletteEntries.append((bytes[at + 2], bytes[at + 1], bytes[at]))
            }
            self.pixelsAt = pixelsAt > 0 ? pixelsAt : paletteAt + count * entrySize
        } else {
            self.pixelsAt = pixelsAt > 0 ? pixelsAt : headerAt + headerSize + (compression == 3 && headerSize == 40 ? 12 : 0)
        }
        palette = paletteEntries
        stride = (width * bitsPerPixel + 31) / 32 * 4
        // Compressed rows are as long as the header says (the image size field).
        runLengthSize = compression == 1 || compression == 2 ? (headerSize >= 40 ? try le(headerAt + 20, 4) : 0) : nil
    }

    /// The pixels as RGBA8, top row first.
    func rgba(_ bytes: [UInt8]) throws(ImageDecoder.DecodeError) -> [UInt8] {
        guard pixelEnd <= bytes.count else { throw .corrupt(format, "the file ends inside its pixels") }
        if runLengthSize != nil { return try runLengthRGBA(bytes) }
        var pixels = [UInt8](repeating: 255, count: width * height * 4)
        // 32-bit BI_RGB files usually leave the fourth byte 0: alpha only if some pixel sets it.
        var sawAlpha = false
        let shifts = masks.map { $0 == 0 ? 0 : $0.trailingZeroBitCount }
        let maxima = masks.enumerated().map { index, mask in mask == 0 ? 1 : mask >> shifts[index] }
        pixels.withUnsafeMutableBufferPointer { target in
            for row in 0..<height {
                let source = pixelsAt + (topDown ? row : height - 1 - row) * stride
                for column in 0..<width {
                    let out = (row * width + column) * 4
                    switch bitsPerPixel {
                    case 24:
                        let at = source + column * 3
                        target[out] = bytes[at + 2]
                        target[out + 1] = bytes[at + 1]
                        target[out + 2] = bytes[at]
                    case 16, 32:
                        let at = source + column * (bitsPerPixel / 8)
                        var word = UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8
                        if bitsPerPixel == 32 { word |= UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24 }
                        for channel in 0..<4 where masks[channel] != 0 {
                            let value = (word & masks[channel]) >> shifts[channel]
                            target[out + channel] = UInt8((UInt64(value) * 255 + UInt64(maxima[channel]) / 2) / UInt64(maxima[channel]))
                        }
                        if masks[3] != 0, target[out + 3] != 0 { sawAlpha = true }
                    default:
                        let bitOffset = column * bitsPerPixel
                        let byte = bytes[source + bitOffset / 8]
                        let index = Int(byte >> (8 - bitsPerPixel - bitOffset % 8)) & ((1 << bitsPerPixel) - 1)
                        let colour = index < palette.count ? palette[index] : (0, 0, 0)
                        target[out] = colour.0
                        target[out + 1] = colour.1
                        target[out + 2] = colour.2
                    }
                }
            }
            if masks[3] != 0, !sawAlpha {
                for index in Swift.stride(from: 3, to: target.count, by: 4) { target[index] = 255 }
            }
        }
        return pixels
    }

    /// RLE8 and RLE4: runs of one index, absolute runs, and escapes that end a
    /// row, the picture, or skip ahead (skipped pixels are transparent, as
    /// browsers leave them). Rows bottom up.
    private func runLengthRGBA(_ bytes: [UInt8]) throws(ImageDecoder.DecodeError) -> [UInt8] {
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        var x = 0, row = 0, at = pixelsAt
        let end = runLengthSize.map { $0 > 0 ? min(bytes.count, pixelsAt + $0) : bytes.count } ?? bytes.count
        func put(_ index: Int) {
            guard x < width, row < height else { return }
            let out = ((height - 1 - row) * width + x) * 4
            let colour = index < palette.count ? palette[index] : (0, 0, 0)
            pixels[out] = colour.0
            pixels[out + 1] = colour.1
            pixels[out + 2] = colour.2
            pixels[out + 3] = 255
            x += 1
        }
        let four = bitsPerPixel == 4
        while at + 1 < end, row < height {
            let count = Int(bytes[at]), value = Int(bytes[at + 1])
            at += 2
            if count > 0 {
                for step in 0..<count { put(four ? (step & 1 == 0 ? value >> 4 : value & 0xF) : value) }
                continue
            }
            switch value {
            case 0: x = 0; row += 1
            case 1: return pixels
            case 2:
                guard at + 1 < end else { throw .corrupt(format, "the file ends inside a run") }
                x += Int(bytes[at])
                row += Int(bytes[at + 1])
                at += 2
            default:
                let length = four ? (value + 1) / 2 : value
                guard at + length <= end else { throw .corrupt(format, "the file ends inside a run") }
                for step in 0..<value {
                    let byte = Int(bytes[at + (four ? step / 2 : step)])
                    put(four ? (step & 1 == 0 ? byte >> 4 : byte & 0xF) : byte)
                }
                at += length + (length & 1)
            }
        }
        return pixels
    }
}
