#if canImport(Glibc)
import Glibc
#endif

/// Finding text in text, by its UTF-8 bytes.
///
/// The standard library's versions of these live in the regular-expression
/// module, which imgcache does not link (its runtime and tables cost every
/// start-up); these cover what the code asks: plain substrings, no patterns.
/// A match is of bytes, so "e" is found in a decomposed "é", which is what
/// URLs, headers and markup want. Code that does import the standard
/// library's (the tests) gets those: the names they share give way, and the
/// `byte…` names are the same functions under names of their own.
extension StringProtocol {
    /// The first range where `other` occurs, or nil; an empty `other` matches at the start.
    @_disfavoredOverload package func firstRange(of other: some StringProtocol) -> Range<Index>? {
        byteRange(of: Array(other.utf8), from: startIndex)
    }

    /// Every range where `other` occurs, left to right, not overlapping.
    @_disfavoredOverload package func ranges(of other: some StringProtocol) -> [Range<Index>] { byteRanges(of: other) }

    /// Whether `other` occurs; an empty `other` always does.
    @_disfavoredOverload package func contains(_ other: some StringProtocol) -> Bool { firstRange(of: other) != nil }

    /// A copy with every occurrence of `other` replaced by `replacement`.
    @_disfavoredOverload package func replacing(_ other: some StringProtocol, with replacement: some StringProtocol) -> String {
        replacingBytes(of: other, with: replacement)
    }

    /// `ranges(of:)`: every range where `other`'s bytes occur, left to right, not overlapping.
    package func byteRanges(of other: some StringProtocol) -> [Range<Index>] {
        let needle = Array(other.utf8)
        guard !needle.isEmpty else { return [] }
        var found: [Range<Index>] = []
        var start = startIndex
        while let range = byteRange(of: needle, from: start) {
            found.append(range)
            start = range.upperBound
        }
        return found
    }

    /// `replacing(_:with:)`: a copy with every occurrence of `other`'s bytes replaced.
    package func replacingBytes(of other: some StringProtocol, with replacement: some StringProtocol) -> String {
        var result = ""
        var start = startIndex
        for range in byteRanges(of: other) {
            result += self[start..<range.lowerBound]
            result += replacement
            start = range.upperBound
        }
        result += self[start...]
        return result
    }

    /// The first range at or after `start` whose bytes are `needle`; an empty needle matches at `start`.
    package func byteRange(of needle: [UInt8], from start: Index) -> Range<Index>? {
        guard let first = needle.first else { return start..<start }
        let bytes = utf8
        var index = start
        while index != bytes.endIndex {
            if bytes[index] == first {
                var candidate = index, matched = 0
                while matched < needle.count, candidate != bytes.endIndex, bytes[candidate] == needle[matched] {
                    bytes.formIndex(after: &candidate)
                    matched += 1
                }
                if matched == needle.count { return index..<candidate }
            }
            bytes.formIndex(after: &index)
        }
        return nil
    }
}

extension String {
    /// Where `byte` first occurs in the UTF-8 bytes, found by `memchr` over the bytes where they
    /// are: every URL of a run is searched for `#`, `@` and `?`, and a walk of the `utf8` view
    /// costs a check per byte.
    package func firstUTF8Index(of byte: UInt8) -> Index? {
        let offset = utf8.withContiguousStorageIfAvailable { buffer -> Int? in
            guard let base = buffer.baseAddress, let found = memchr(base, Int32(byte), buffer.count) else { return nil }
            return UnsafeRawPointer(found) - UnsafeRawPointer(base)
        }
        guard let offset else { return utf8.firstIndex(of: byte) }
        return offset.map { utf8.index(utf8.startIndex, offsetBy: $0) }
    }

    /// Whether `byte` occurs in the UTF-8 bytes (`firstUTF8Index`).
    package func containsUTF8(_ byte: UInt8) -> Bool { firstUTF8Index(of: byte) != nil }
}

extension String {
    /// The parts one after another, made in one allocation: a cache lookup builds its paths
    /// so (`a + b + c` makes a string for each `+`).
    package static func joined(_ a: String, _ b: String, _ c: String, _ d: String = "", _ e: String = "") -> String {
        let count = a.utf8.count + b.utf8.count + c.utf8.count + d.utf8.count + e.utf8.count
        return String(unsafeUninitializedCapacity: count) { buffer in
            // A cursor passed along, not a captured variable: a closure that writes a captured
            // variable costs a run-time exclusivity check each time.
            guard let base = buffer.baseAddress else { return 0 }
            var end = String.put(a, at: base)
            end = String.put(b, at: end)
            end = String.put(c, at: end)
            end = String.put(d, at: end)
            end = String.put(e, at: end)
            return end - base
        }
    }

    /// Copies `part`'s UTF-8 bytes to `target`; where they end.
    private static func put(_ part: String, at target: UnsafeMutablePointer<UInt8>) -> UnsafeMutablePointer<UInt8> {
        var part = part
        return part.withUTF8 { bytes in
            guard let source = bytes.baseAddress else { return target }
            target.update(from: source, count: bytes.count)
            return target + bytes.count
        }
    }
}
