import ImgCacheCore
import Testing

@Suite struct URLTextTests {
    @Test func bytesThatAreNotUTF8ArePercentEncodedAndTheRestIsKept() {
        #expect(URLText.decode(Array("http://h/café.png".utf8)) == "http://h/café.png")
        #expect(URLText.decode(Array("http://h/caf".utf8) + [0xE9] + Array(".png".utf8)) == "http://h/caf%E9.png")
        #expect(URLText.decode([0xC3]) == "%C3")
        #expect(URLText.decode([0xF0, 0x9F, 0x98, 0x80, 0xFF]) == "😀%FF")
    }

    @Test func theFragmentIsNoPartOfTheURL() {
        #expect(URLText.withoutFragment("http://h/a.png#x#y") == "http://h/a.png")
        #expect(URLText.withoutFragment("http://h/a.png?q=1") == "http://h/a.png?q=1")
    }
}
