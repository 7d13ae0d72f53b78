@testable import ImgCacheCore
import Testing

@Suite struct URLListTests {
    func lines(_ text: String, chunk: Int = 3, limit: Int = 100) -> [LineSplitter.Line] {
        var splitter = LineSplitter(maximumLength: limit)
        let bytes = Array(text.utf8)
        var lines: [LineSplitter.Line] = []
        var start = 0
        while start < bytes.count {
            lines += splitter.push(bytes[start..<min(bytes.count, start + chunk)])
            start += chunk
        }
        return lines + splitter.finish()
    }

    @Test func linesAreSplitAcrossChunksAndNumbered() {
        let found = lines("a\nbb\n\nccc")
        #expect(found.map { String(decoding: $0.bytes, as: UTF8.self) } == ["a", "bb", "", "ccc"])
        #expect(found.map(\.number) == [1, 2, 3, 4])
        #expect(lines("a\n").count == 1)
    }

    @Test func commentsBlanksAndSpacesAreSkippedAndCRLFAccepted() {
        let items = lines("# list\r\n\r\n  http://h/a.png  \r\n\t#indented comment\nhttp://h/b.png#frag").compactMap(URLList.item(for:))
        #expect(items == [.url("http://h/a.png", line: 3), .url("http://h/b.png#frag", line: 5)])
    }

    /// A comment after the URL, past a blank (no URL holds one raw): the URL alone, its fragment kept.
    @Test func aCommentAfterTheURLIsNoPartOfIt() {
        let items = lines("http://h/a.png # the logo\nhttp://h/b.png\t#\tphoto\nhttp://h/c.png#frag   # note\nhttp://h/d e.png\n")
            .compactMap(URLList.item(for:))
        #expect(items == [.url("http://h/a.png", line: 1), .url("http://h/b.png", line: 2), .url("http://h/c.png#frag", line: 3),
                          .url("http://h/d e.png", line: 4)])
    }

    @Test func anOverlongLineIsRejectedWithoutBeingKept() {
        let long = String(repeating: "x", count: 250)
        let found = lines("http://h/a\n" + long + "\nhttp://h/b\n", chunk: 64, limit: 100)
        #expect(found.map(\.truncated) == [false, true, false])
        #expect(found[1].bytes.count == 100)
        guard case .rejected(_, let line, let reason)? = URLList.item(for: found[1]) else {
            Issue.record("not rejected")
            return
        }
        #expect(line == 2)
        #expect(reason.hasPrefix("longer than"))
    }
}
