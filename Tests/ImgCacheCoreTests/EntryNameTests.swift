import ImgCacheCore
import Testing

@Suite struct EntryNameTests {
    @Test func anEntryIsNamedForItsBytesAndLookedForUnderEveryName() {
        let key = CacheKey("https://h/photo.jpeg")
        #expect(key.fileName(for: .jpeg) == key.digest + ".jpg")
        #expect(key.fileName(for: .webp) == key.digest + ".webp")
        // The URL's format first, then the other formats, then earlier versions' names.
        let stored = CodecRegistry.storedFormats.map(\.fileExtension)
        #expect(Array(key.candidateFileNames.prefix(4)) == ["jpg", "png", "webp", "gif"].map { key.digest + "." + $0 })
        #expect(key.candidateFileNames == stored.map { key.digest + "." + $0 } + [key.digest + ".jpeg", key.digest])
        let png = CacheKey("https://h/x.png")
        #expect(png.candidateFileNames.first == png.digest + ".png" && png.candidateFileNames.count == stored.count + 1)
        let plain = CacheKey("https://h/image?id=3")
        #expect(plain.candidateFileNames.first == plain.digest + ".jpg")
        let php = CacheKey("https://h/image.php")
        #expect(php.candidateFileNames.suffix(2) == [php.digest + ".php", php.digest])
    }
}
