/// Reads the orientation tag (0x0112) from EXIF without a library: a JPEG's
/// APP1 segment (`Exif\0\0`, then a TIFF structure), a PNG's `eXIf` chunk or
/// a WebP's `EXIF` chunk. 1 is upright, 2–8 the mirrorings and rotations of the
/// EXIF specification.
enum ExifOrientation {
    static func read(_ bytes: [UInt8]) -> Int? {
        // No EXIF after the start of the image data.
        JPEGSegments(bytes).first(0xE1, signature: [0x45, 0x78, 0x69, 0x66, 0, 0], in: bytes).flatMap { orientation(inTIFF: Array($0)) }
    }

    /// From EXIF's TIFF structure, with or without the `Exif\0\0` that some writers put first.
    static func orientation(inTIFF data: ArraySlice<UInt8>) -> Int? {
        let exif: [UInt8] = [0x45, 0x78, 0x69, 0x66, 0, 0]
        let tiff = data.starts(with: exif) ? Array(data.dropFirst(6)) : Array(data)
        return orientation(inTIFF: tiff)
    }

    private static func orientation(inTIFF tiff: [UInt8]) -> Int? {
        guard tiff.count >= 8 else { return nil }
        let little: Bool
        switch (tiff[0], tiff[1]) {
        case (0x49, 0x49): little = true
        case (0x4D, 0x4D): little = false
        default: return nil
        }
        func value(_ at: Int, _ size: Int) -> Int? {
            guard at >= 0, at + size <= tiff.count else { return nil }
            var result = 0
            for index in 0..<size {
                let byte = Int(tiff[at + (little ? size - 1 - index : index)])
                result = result << 8 | byte
            }
            return result
        }
        guard let ifd = value(4, 4), let entries = value(ifd, 2) else { return nil }
        for entry in 0..<min(entries, 512) {
            let at = ifd + 2 + entry * 12
            guard let tag = value(at, 2) else { return nil }
            if tag == 0x0112, let orientation = value(at + 8, 2), (1...8).contains(orientation) { return orientation }
        }
        return nil
    }
}
