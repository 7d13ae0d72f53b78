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
    ] as [(String, String?)])
    func plainExtension(url: String, expected: String?) {
        #expect(CacheKey.plainExtension(ofURL: url) == expected)
    }
}
