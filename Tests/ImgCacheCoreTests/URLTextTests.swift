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

    @Test(arguments: [
        ("HTTP://Host/im%67/a.png", "http://host/img/a.png"),
        ("http://host:80/a.png", "http://host/a.png"),
        ("https://host:443/a.png", "https://host/a.png"),
        ("https://host:8443/a.png", "https://host:8443/a.png"),
        ("http://host", "http://host/"),
        ("http://host?q=1", "http://host/?q=1"),
        ("http://host/a%2fb%7e.png", "http://host/a%2Fb~.png"),
        ("http://host/a/./b/../c.png", "http://host/a/c.png"),
        ("http://host/a/%2E%2E/c.png", "http://host/c.png"),
        ("http://host/../../c.png", "http://host/c.png"),
        ("http://host/a/b/..", "http://host/a/"),
        // User information is no part of a key: the request fingerprint carries credentials.
        ("http://User:PW@Host:80/a.png", "http://host/a.png"),
        ("http://[::1]:80/a.png", "http://[::1]/a.png"),
        ("http://[::1]/a.png", "http://[::1]/a.png"),
        ("http://host/a.png?x=%41%2b", "http://host/a.png?x=A%2B"),
        ("http://host/.hidden/a..b.png", "http://host/.hidden/a..b.png"),
        // Bytes past ASCII are the escapes a client sends for them.
        ("http://host/café.png?q=Zürich", "http://host/caf%C3%A9.png?q=Z%C3%BCrich"),
        ("http://host/caf%c3%a9.png", "http://host/caf%C3%A9.png"),
        ("http://Hôte.example/a.png", "http://hôte.example/a.png"),
        ("ftp://HOST/a", "ftp://HOST/a"),
        ("not a url", "not a url"),
    ])
    func equivalentURLsHaveOneNormalForm(given: String, normal: String) {
        #expect(URLText.normalized(given) == normal)
        // Normal forms are fixed points.
        #expect(URLText.normalized(normal) == normal)
    }
}
