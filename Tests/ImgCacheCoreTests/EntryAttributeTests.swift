@testable import ImgCacheCore
import Testing

@Suite struct EntryAttributeTests {
    static func entry(etag: String?, lastModified: String?, contentType: String? = "image/jpeg") -> EntryMetadata {
        EntryMetadata(fileName: "0123456789abcdef0123456789abcdef.jpg", inode: 0, byteCount: 183_211,
                      key: "https://cdn.example.com/photos/2026/11/a-rather-long-file-name-for-a-photo.jpg",
                      url: "https://cdn.example.com/photos/2026/11/a-rather-long-file-name-for-a-photo.jpg",
                      etag: etag, lastModified: lastModified, contentType: contentType, format: .jpeg,
                      width: 4032, height: 3024, frameCount: 1, storedAt: 1_795_238_615.123456)
    }

    @Test(arguments: [
        ("\"6b046c5e-4719\"", "Mon, 23 Nov 2026 16:39:58 GMT"),          // nginx
        ("\"d41d8cd98f00b204e9800998ecf8427e\"", "Sat, 21 Nov 2026 05:23:02 GMT"),  // S3
        ("W/\"d41d8cd98f00b204e9800998ecf8427e\"", nil),
    ] as [(String, String?)])
    func typicalMetadataRoundTripsInUnder64Bytes(etag: String, lastModified: String?) throws {
        let metadata = Self.entry(etag: etag, lastModified: lastModified)
        let bytes = EntryAttribute.encode(metadata)
        #expect(bytes.count <= 64, "\(bytes.count) bytes")
        let decoded = try #require(EntryAttribute.decode(bytes, fileName: metadata.fileName, key: metadata.key))
        #expect(decoded.forKey)
        #expect(decoded.metadata == metadata)
    }

    @Test func unusualValuesAreKeptAsText() throws {
        let odd = Self.entry(etag: "\"UPPER-CASE\"", lastModified: "Monday, 23-Nov-26 16:39:58 GMT", contentType: "application/octet-stream")
        let decoded = try #require(EntryAttribute.decode(EntryAttribute.encode(odd), fileName: odd.fileName, key: odd.key))
        #expect(decoded.metadata == odd)
        let none = Self.entry(etag: nil, lastModified: nil, contentType: nil)
        #expect(EntryAttribute.decode(EntryAttribute.encode(none), fileName: none.fileName, key: none.key)?.metadata == none)
    }

    @Test func freshnessAndOrientationRoundTripInBothForms() throws {
        var metadata = Self.entry(etag: "\"6b046c5e-4719\"", lastModified: "Mon, 23 Nov 2026 16:39:58 GMT")
        metadata.freshUntil = 1_795_242_215
        metadata.orientation = 6
        let bytes = EntryAttribute.encode(metadata)
        #expect(bytes.count <= 64, "\(bytes.count) bytes")
        #expect(try #require(EntryAttribute.decode(bytes, fileName: metadata.fileName, key: metadata.key)).metadata == metadata)
        #expect(EntryMetadata(parsing: metadata.serialized()) == metadata)
        #expect(metadata.uprightSize.width == 3024 && metadata.uprightSize.height == 4032)
        #expect(metadata.isFresh(at: 1_795_242_214) && !metadata.isFresh(at: 1_795_242_215))
        for length in 0..<bytes.count {
            #expect(EntryAttribute.decode(Array(bytes.prefix(length)), fileName: metadata.fileName, key: metadata.key) == nil)
        }
    }

    @Test func anotherKeyOrCutBytesAreNoticed() {
        let metadata = Self.entry(etag: "\"a\"", lastModified: nil)
        let bytes = EntryAttribute.encode(metadata)
        #expect(EntryAttribute.decode(bytes, fileName: metadata.fileName, key: "https://other/")?.forKey == false)
        for length in 0..<bytes.count {
            #expect(EntryAttribute.decode(Array(bytes.prefix(length)), fileName: metadata.fileName, key: metadata.key) == nil)
        }
        // The text form of earlier versions is told apart by its first byte.
        #expect(!EntryAttribute.isCompact(Array(metadata.serialized().utf8)))
    }

    @Test func httpDatesRoundTrip() {
        #expect(HTTPDate.seconds("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
        #expect(HTTPDate.format(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(951_782_400) == "Tue, 29 Feb 2000 00:00:00 GMT")
        #expect(HTTPDate.format(4_102_444_799) == "Thu, 31 Dec 2099 23:59:59 GMT")
        // Every day of four years, leap days included, reads back as the same second.
        for day in stride(from: Int64(10_957), to: 12_418, by: 1) {
            let seconds = day * 86_400 + 45_296
            #expect(HTTPDate.seconds(HTTPDate.format(seconds)) == seconds, "\(seconds)")
        }
        #expect(HTTPDate.seconds("Sunday, 06-Nov-94 08:49:37 GMT") == nil)
    }
}
