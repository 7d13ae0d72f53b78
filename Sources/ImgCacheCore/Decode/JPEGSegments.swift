/// A JPEG's marker segments up to its first scan, walked by their lengths as
/// a decoder walks them. A search for marker bytes would be fooled: a camera
/// photo's EXIF block (APP1) holds a whole JPEG thumbnail, with a scan and an
/// end-of-image marker of its own.
struct JPEGSegments {
    struct Segment {
        let marker: UInt8
        /// The segment's data, after its length.
        let data: Range<Int>
    }

    private(set) var segments: [Segment] = []
    /// Where the first scan's marker (FF DA) is; nil when the bytes end before it.
    private(set) var firstScan: Int?

    init(_ bytes: [UInt8]) {
        guard bytes.count >= 4, bytes[0] == 0xFF, bytes[1] == 0xD8 else { return }
        var offset = 2
        while offset + 4 <= bytes.count {
            // Junk where a marker should be (a segment whose length is wrong, bytes a writer left):
            // skipped up to the next FF that starts a marker, as libjpeg's next_marker does (FF 00 is
            // a stuffed byte, not a marker).
            guard bytes[offset] == 0xFF, bytes[offset + 1] != 0x00 else {
                guard let next = JPEGSegments.nextMarker(in: bytes, from: offset + 1) else { return }
                offset = next
                continue
            }
            let marker = bytes[offset + 1]
            // Fill bytes before a marker.
            if marker == 0xFF {
                offset += 1
                continue
            }
            if marker == 0xDA {
                firstScan = offset
                return
            }
            // Markers without a length (TEM, RSTn) are rare before the first scan.
            if marker == 0x01 || (0xD0...0xD7).contains(marker) {
                offset += 2
                continue
            }
            let length = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            guard offset + 2 + length <= bytes.count else { return }
            // A length under 2 (a cut segment) skips nothing past itself; the walk then resynchronises.
            segments.append(Segment(marker: marker, data: (offset + 4)..<(offset + 2 + max(2, length))))
            offset += 2 + max(2, length)
            if segments.count > 1 << 16 { return }
        }
    }

    /// Where the next marker at or after `start` begins: an FF followed by a byte other than 00 and FF
    /// (after any fill FFs); nil when the bytes end first.
    static func nextMarker(in bytes: [UInt8], from start: Int) -> Int? {
        var offset = start
        while offset + 1 < bytes.count {
            if bytes[offset] == 0xFF, bytes[offset + 1] != 0x00 {
                if bytes[offset + 1] != 0xFF { return offset }
            }
            offset += 1
        }
        return nil
    }

    /// The first segment with `marker` whose data starts with `signature`: its data after the signature.
    func first(_ marker: UInt8, signature: [UInt8], in bytes: [UInt8]) -> ArraySlice<UInt8>? {
        for segment in segments where segment.marker == marker && bytes[segment.data].starts(with: signature) {
            return bytes[(segment.data.lowerBound + signature.count)..<segment.data.upperBound]
        }
        return nil
    }

    /// Whether an ICC profile is embedded (APP2 `ICC_PROFILE`).
    func hasColourProfile(in bytes: [UInt8]) -> Bool {
        first(0xE2, signature: Array("ICC_PROFILE".utf8) + [0], in: bytes) != nil
    }
}
