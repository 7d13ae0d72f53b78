import CImgCacheShims

/// An SVG document read as bytes, never as Swift `String` characters: the
/// checks before librsvg sees a document (its prolog, entities, embedded
/// images, end) search up to `BodyVerifier.wholeReadLimit` of hostile markup
/// in the main process, so they go at memory speed (memmem, memchr) and cost
/// no copy of the text.
struct SVGMarkup {
    let bytes: [UInt8]

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    init(_ text: String) {
        self.bytes = Array(text.utf8)
    }

    var count: Int { bytes.count }

    /// Where `needle` first occurs at or after `start` (and before `end`, when given).
    func find(_ needle: [UInt8], from start: Int, before end: Int? = nil) -> Int? {
        let limit = min(end ?? bytes.count, bytes.count)
        guard start <= limit, needle.count <= limit - start else { return nil }
        let found = bytes.withUnsafeBufferPointer { all in
            needle.withUnsafeBufferPointer { sought in
                ic_find_bytes(all.baseAddress, limit, start, sought.baseAddress, sought.count)
            }
        }
        return found >= 0 ? found : nil
    }

    func find(_ needle: String, from start: Int, before end: Int? = nil) -> Int? {
        find(Array(needle.utf8), from: start, before: end)
    }

    /// Where byte `byte` first occurs at or after `start`, before `end`.
    func find(byte: UInt8, from start: Int, before end: Int? = nil) -> Int? {
        find([byte], from: start, before: end)
    }

    /// Whether the bytes at `index` are `prefix`'s.
    func has(_ prefix: String, at index: Int) -> Bool {
        var position = index
        for byte in prefix.utf8 {
            guard position < bytes.count, bytes[position] == byte else { return false }
            position += 1
        }
        return true
    }

    /// Whether the bytes at `index` start like `prefix` as far as they go (a cut document may say no more).
    func mayBe(_ prefix: String, at index: Int) -> Bool {
        var position = index
        for byte in prefix.utf8 {
            guard position < bytes.count else { return true }
            guard bytes[position] == byte else { return false }
            position += 1
        }
        return true
    }

    /// The first index at or after `index` that is not XML white space.
    func skippingSpace(from index: Int) -> Int {
        var position = index
        while position < bytes.count, SVGMarkup.isSpace(bytes[position]) { position += 1 }
        return position
    }

    /// `range` as text.
    func text(_ range: Range<Int>) -> String {
        String(decoding: bytes[range], as: UTF8.self)
    }

    /// XML's white space: space, tab, line feed, carriage return.
    static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }
}
