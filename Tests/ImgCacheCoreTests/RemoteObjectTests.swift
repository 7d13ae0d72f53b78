import Foundation
@testable import ImgCacheCore
import Testing

@Suite struct RemoteObjectTests {
    let object = RemoteObject(bytes: Array("GIF89a image bytes".utf8), contentType: "image/gif",
                              url: "https://user:secret@example.com/a.gif?x=1", etag: "\"v1\"",
                              lastModified: "Mon, 23 Nov 2026 10:00:00 GMT", storedAt: 1_795_000_000.5)

    @Test func anObjectReadsBackAsItWasWrittenWithoutCredentials() throws {
        let encoded = try object.encoded()
        let text = String(decoding: encoded, as: UTF8.self)
        #expect(text.hasPrefix("imgcache-object 1\nsha256 ") && text.hasSuffix("\n\nGIF89a image bytes"))
        #expect(!text.contains("secret") && !text.contains("user:"))
        let decoded = try RemoteObject(decoding: encoded)
        #expect(decoded.bytes == object.bytes && decoded.etag == "\"v1\"" && decoded.contentType == "image/gif")
        #expect(decoded.storedAt == object.storedAt && decoded.url == object.url)
    }

    @Test func damageIsFound() throws {
        let encoded = try object.encoded()
        func defect(_ data: [UInt8]) -> RemoteObject.Defect? {
            do { _ = try RemoteObject(decoding: data); return nil } catch { return error }
        }
        var flipped = encoded
        flipped[flipped.count - 1] ^= 1
        #expect(defect(flipped) == .wrongDigest)
        #expect(defect(Array(encoded.dropLast())) == .wrongLength(expected: 18, found: 17))
        #expect(defect(Array("GIF89a".utf8)) == .noHeader)
        #expect(defect(Array("imgcache-object 1\nsha256 00\n".utf8)) == .badHeader("no end of header"))
        #expect(defect(Array("imgcache-object 1\nlength 1\n\nx".utf8)) == .badHeader("missing length, sha256 or stored"))
        // Fields become request headers (If-None-Match): a CR or LF in one is refused, not unescaped into a header.
        let text = String(decoding: encoded, as: UTF8.self)
        let injected = text.replacingOccurrences(of: "etag \"v1\"", with: "etag \"v1\"%0D%0ACookie: a=b")
        #expect(injected != text && defect(Array(injected.utf8)) == .badHeader("control character in etag"))
    }

    @Test func keysArePlainHexUnderTheNamespace() {
        let key = RemoteKey(namespace: "thumbs", digest: "0123456789abcdef0123456789abcdef")
        #expect(key.path == "v1/thumbs/01/0123456789abcdef0123456789abcdef")
        #expect(key.redisKey == "imgcache:v1:thumbs:0123456789abcdef0123456789abcdef")
    }

    @Test func sha256MatchesTheStandardVectors() throws {
        #expect(try SHA256.hex([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(try SHA256.hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}
