import CImgCacheShims

extension ImageFormat {
    public static let tiff = ImageFormat(declaring: "tiff")
}

/// TIFF, either byte order (BigTIFF too): the first page's header read from
/// its directory here (its orientation too), whether every page's strips or
/// tiles lie within the file, and the first page decoded by libtiff in the
/// order it is stored.
struct TIFFCodec: ImageCodec {
    let format = ImageFormat.tiff
    let fileExtensions = ["tiff", "tif"]
    let capabilities: CodecCapabilities = [.decode]
    let decodeMemoryFactor = 2.5

    func recognizes(_ bytes: [UInt8]) -> Bool {
        [[0x49, 0x49, 0x2A, 0x00], [0x4D, 0x4D, 0x00, 0x2A], [0x49, 0x49, 0x2B, 0x00], [0x4D, 0x4D, 0x00, 0x2B]]
            .contains { CodecShim.starts(bytes, with: $0) }
    }

    func probe(_ bytes: [UInt8]) throws(ImageHeader.ProbeError) -> ImageHeader {
        guard let directory = TIFFDirectory(bytes) else { throw .corrupt(format, "the first directory is not in the file") }
        guard let width = directory.value(256), let height = directory.value(257), width > 0, height > 0 else {
            throw .corrupt(format, "no width or height")
        }
        let samples = directory.value(277) ?? 1
        let photometric = directory.value(262) ?? 1
        // Extra samples beyond the colour channels are alpha (associated or not) when ExtraSamples says so.
        let colourChannels = [2: 3, 6: 3, 5: 4, 8: 3][photometric] ?? 1
        let alpha = samples > colourChannels && (directory.values(338)?.contains { $0 == 1 || $0 == 2 } ?? false)
        // Its Orientation tag means what EXIF's does: applied after decoding, as a JPEG's is.
        return ImageHeader(format: format, width: width, height: height, frameCount: 1, hasAlpha: alpha,
                           bitDepth: directory.value(258) ?? 1, orientation: directory.value(274) ?? 1)
    }

    /// Whole when every page's directory, and its strips (or tiles), lie within the file.
    func missingEnd(of bytes: [UInt8]) -> String? {
        var directory = TIFFDirectory(bytes)
        var pages = 0
        while let page = directory {
            pages += 1
            guard let offsets = page.values(273) ?? page.values(324),
                  let counts = page.values(279) ?? page.values(325) else { return "page \(pages) has no strips or tiles" }
            for (offset, count) in zip(offsets, counts) where offset + count > bytes.count {
                return "the file is \(bytes.count) bytes; the image data of page \(pages) runs to \(offset + count)"
            }
            guard let next = page.next, pages < 1024 else { return nil }
            directory = TIFFDirectory(bytes, at: next)
            if directory == nil { return "the file is \(bytes.count) bytes; page \(pages + 1) starts at \(next)" }
        }
        return "the first directory is not in the file"
    }

    func decode(_ bytes: [UInt8], header: ImageHeader, maximumPixels: PixelLimit,
                maximumFrames: Int) throws(ImageDecoder.DecodeError) -> DecodedImage {
        try CodecShim.decode(bytes, header: header, maximumPixels: maximumPixels, maximumFrames: maximumFrames, ic_tiff_decode)
    }
}

/// The first image file directory of a TIFF: its tags' values, read with the
/// file's byte order (classic or BigTIFF), every offset checked.
struct TIFFDirectory {
    private let bytes: [UInt8]
    private let little: Bool
    private let big: Bool
    /// Tag → (type, count, where its values are).
    private var entries: [Int: (type: Int, count: Int, at: Int)] = [:]

    /// Where the next page's directory starts; nil on the last page.
    private(set) var next: Int?

    /// The directory at `offset` (nil: the first page's, which the header points at).
    init?(_ bytes: [UInt8], at offset: Int? = nil) {
        guard bytes.count >= 8 else { return nil }
        self.bytes = bytes
        little = bytes[0] == 0x49
        big = (little ? bytes[2] : bytes[3]) == 0x2B
        let first = offset ?? (big ? number(8, 8) : number(4, 4))
        guard let first, first >= 8 else { return nil }
        let countWidth = big ? 8 : 2, entryWidth = big ? 20 : 12, inline = big ? 8 : 4
        // The whole table and the next directory's offset after it must be in the file.
        guard let count = number(first, countWidth), count > 0, count <= 4096,
              first + countWidth + count * entryWidth + (big ? 8 : 4) <= bytes.count else { return nil }
        for index in 0..<count {
            let at = first + countWidth + index * entryWidth
            guard let tag = number(at, 2), let type = number(at + 2, 2), let values = number(at + 4, big ? 8 : 4) else { break }
            let size = [1: 1, 2: 1, 3: 2, 4: 4, 6: 1, 7: 1, 8: 2, 9: 4, 16: 8, 17: 8, 18: 8][type] ?? 0
            guard size > 0, values > 0, values <= 1 << 24 else { continue }
            let valuesAt = at + 4 + (big ? 8 : 4)
            let location = size * values <= inline ? valuesAt : number(valuesAt, big ? 8 : 4)
            // A value outside the file is a directory cut short.
            guard let location, location + size * values <= bytes.count else { return nil }
            entries[tag] = (type, values, location)
        }
        let following = number(first + countWidth + count * entryWidth, big ? 8 : 4)
        next = following.flatMap { $0 > 0 && $0 != first ? $0 : nil }
    }

    /// A tag's first value.
    func value(_ tag: Int) -> Int? { values(tag, limit: 1)?.first }

    /// A tag's values (up to `limit`), when they lie within the file.
    func values(_ tag: Int, limit: Int = 1 << 20) -> [Int]? {
        guard let entry = entries[tag] else { return nil }
        let size = [1: 1, 3: 2, 4: 4, 16: 8][entry.type] ?? 0
        guard size > 0 else { return nil }
        var result: [Int] = []
        for index in 0..<min(entry.count, limit) {
            guard let value = number(entry.at + index * size, size) else { return nil }
            result.append(value)
        }
        return result
    }

    private func number(_ offset: Int, _ count: Int) -> Int? {
        guard offset >= 0, count <= 8, offset <= bytes.count - count else { return nil }
        var value: UInt64 = 0
        for index in 0..<count {
            value = value << 8 | UInt64(bytes[offset + (little ? count - 1 - index : index)])
        }
        return value <= UInt64(Int.max) ? Int(value) : nil
    }
}
