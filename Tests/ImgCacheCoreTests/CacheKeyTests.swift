import ImgCacheCore
import Testing

@Suite struct CacheKeyTests {
    @Test func theFileNameIsTheDigestPlusAPlainExtension() {
        let key = CacheKey("https://example.com/a/photo.JPG?size=large#top")
        #expect(key.digest == MD5.hex("https://example.com/a/photo.JPG?size=large#top"))
        #expect(key.fileName == key.digest + ".jpg")
        #expect(key.shard == String(key.digest.prefix(2)))
    }

    @Test(arguments: [
        ("https://h/x.png", "png"), ("https://h/x.webp?q=1", "webp"), ("https://h/dir.v2/x", nil),
        ("https://h/x", nil), ("https://h/", nil), ("https://h", nil), ("https://h/.png", nil),
        ("https://h/x.verylongext", nil), ("https://h/x.p-g", nil), ("https://h/x.meta", nil), ("https://h/x.tmp", nil),
        ("https://h/x.", nil), ("https://h/x.tar.gz", "gz"), ("https://h/x.jpg/", nil), ("https://h/a.png#b.gif", "png"),
        ("https://h/ñ.PNG", "png"), ("https://h/x.pñg", nil), ("h/x.Jpeg", "jpeg"), ("https://h/x.p@g", nil), ("https://h/x.P1", "p1"),
        ("https://h/a/b.c/d.GIF?x=y.z", "gif"), ("x://", nil),
    ] as [(String, String?)])
    func plainExtension(url: String, expected: String?) {
        #expect(CacheKey.plainExtension(ofURL: url) == expected)
    }

    @Test func anASCIIURLsExtensionIsReadAsItsCharactersWouldBe() {
        // A fragment never changes the answer, and one that is not ASCII makes the URL read as characters.
        let alphabet = Array("/.:?#aZ9-_@%gifPNG")
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<2000 {
            var url = "https://h/"
            for _ in 0..<Int(state % 14) {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                url.append(alphabet[Int(state >> 33) % alphabet.count])
            }
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            #expect(CacheKey.plainExtension(ofURL: url) == CacheKey.plainExtension(ofURL: url + "#ñ"), "\(url)")
        }
    }
}
