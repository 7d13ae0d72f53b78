@testable import ImgCacheCore
import Testing

@Suite struct EntryMetadataTests {
    static let sample = EntryMetadata(
        fileName: "abc.png", inode: 42, byteCount: 457, key: "http://h/a.png?x=%0A", url: "http://h/a.png?x=%0A",
        etag: "\"v1\"", lastModified: "Sat, 21 Nov 2026 05:23:02 GMT", contentType: "image/png",
        format: .png, width: 64, height: 48, frameCount: nil, storedAt: 1_795_238_615.25)

    @Test func roundTripsEveryFieldIncludingPercentSigns() {
        let text = Self.sample.serialized()
        #expect(EntryMetadata(parsing: text) == Self.sample)
        var odd = Self.sample
        odd.etag = "line\nbreak\r%25"
        #expect(EntryMetadata(parsing: odd.serialized())?.etag == "line\nbreak\r%25")
    }

    @Test func refusesTextCutShortOrNotOurs() {
        let text = Self.sample.serialized()
        #expect(EntryMetadata(parsing: String(text.dropLast())) == nil)
        #expect(EntryMetadata(parsing: String(text.prefix(40))) == nil)
        #expect(EntryMetadata(parsing: "") == nil)
        #expect(EntryMetadata(parsing: "hello\n") == nil)
    }
}
