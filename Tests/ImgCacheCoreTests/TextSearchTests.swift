import Testing
@testable import ImgCacheCore

/// The substring search imgcache uses in place of the regular-expression module's,
/// swept against that module's over texts of one-scalar characters (where a match of
/// bytes and a match of characters are the same thing).
@Suite struct TextSearchTests {
    /// A small deterministic generator, so that a failure names a case that comes again.
    struct Sequence {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
    }

    /// ASCII, two- three- and four-byte characters, and the separators URLs and markup use.
    static let alphabet = ["a", "b", "/", "=", "é", "ü", "€", "😀"]

    static func text(_ sequence: inout Sequence, upTo length: Int) -> String {
        (0..<sequence.next(length + 1)).map { _ in alphabet[sequence.next(alphabet.count)] }.joined()
    }

    /// UTF-8 offsets of `ranges` in `text`, to compare ranges found by two searches.
    static func offsets(_ ranges: [Range<String.Index>], in text: Substring) -> [Range<Int>] {
        ranges.map { range in
            text.utf8.distance(from: text.startIndex, to: range.lowerBound)..<text.utf8.distance(from: text.startIndex, to: range.upperBound)
        }
    }

    @Test func everyMatchAndReplacementIsTheStandardLibrarysOverASweep() {
        var sequence = Sequence(state: 42)
        for round in 0..<3000 {
            // Searched as a slice of a longer string, as the code does with substrings.
            let whole = TextSearchTests.text(&sequence, upTo: 3) + TextSearchTests.text(&sequence, upTo: 10)
            let text = whole.dropFirst(sequence.next(3))
            var needle = TextSearchTests.text(&sequence, upTo: 3)
            if needle.isEmpty { needle = "a" }
            let expected = TextSearchTests.offsets(text.ranges(of: needle), in: text)
            #expect(TextSearchTests.offsets(text.byteRanges(of: needle), in: text) == expected, "round \(round): '\(text)' / '\(needle)'")
            let first = text.byteRange(of: Array(needle.utf8), from: text.startIndex)
            #expect(TextSearchTests.offsets(first.map { [$0] } ?? [], in: text) == Array(expected.prefix(1)), "round \(round)")
            #expect(text.replacingBytes(of: needle, with: "<€>") == text.replacing(needle, with: "<€>"), "round \(round): '\(text)' / '\(needle)'")
        }
    }

    @Test func anEmptyNeedleMatchesAtTheStartAndIsNeverReplaced() {
        let text = "a/é"
        #expect(text.byteRange(of: [], from: text.startIndex) == text.startIndex..<text.startIndex)
        #expect(text.byteRanges(of: "").isEmpty)
        #expect(text.replacingBytes(of: "", with: "x") == text)
    }

    @Test func aMatchIsOfBytesSoALetterIsFoundBeforeItsCombiningMark() {
        let decomposed = "cafe\u{301}"
        let found = decomposed.byteRanges(of: "e")
        #expect(found.count == 1)
        #expect(decomposed.utf8.distance(from: decomposed.startIndex, to: found[0].lowerBound) == 3)
    }
}
