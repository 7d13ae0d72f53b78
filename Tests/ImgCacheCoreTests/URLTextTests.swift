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
        // An IPv6 address in its one canonical text.
        ("http://[0:0:0:0:0:0:0:1]:8080/a.png", "http://[::1]:8080/a.png"),
        ("http://[2001:DB8:0:0:0::1]/a.png", "http://[2001:db8::1]/a.png"),
        ("http://host/a.png?x=%41%2b", "http://host/a.png?x=A%2B"),
        ("http://host/.hidden/a..b.png", "http://host/.hidden/a..b.png"),
        // Bytes past ASCII are the escapes a client sends for them.
        ("http://host/café.png?q=Zürich", "http://host/caf%C3%A9.png?q=Z%C3%BCrich"),
        ("http://host/caf%c3%a9.png", "http://host/caf%C3%A9.png"),
        // A host with letters past ASCII is sent in its IDNA form, which is its key too.
        ("http://Hôte.example/a.png", "http://xn--hte-kna.example/a.png"),
        ("http://bücher.localhost:8080/a.png", "http://xn--bcher-kva.localhost:8080/a.png"),
        ("http://127.0.0.1:18700/img.jpg", "http://127.0.0.1:18700/img.jpg"),
        ("http://host:/a.png", "http://host/a.png"),
        ("http://host:080/a.png", "http://host:080/a.png"),
        ("http://[::1]:8080/a.png", "http://[::1]:8080/a.png"),
        ("http://[::1]:443/a.png", "http://[::1]:443/a.png"),
        ("https://[::1]:443/a.png", "https://[::1]/a.png"),
        ("ftp://HOST/a", "ftp://HOST/a"),
        ("not a url", "not a url"),
    ])
    func equivalentURLsHaveOneNormalForm(given: String, normal: String) {
        #expect(URLText.normalized(given) == normal)
        // Normal forms are fixed points.
        #expect(URLText.normalized(normal) == normal)
    }

    /// RFC 3492's own samples and the usual ones.
    @Test func punycodeEncodesAsTheRFCSays() {
        #expect(Punycode.asciiHost("bücher.example") == "xn--bcher-kva.example")
        #expect(Punycode.asciiHost("MÜNCHEN.de") == "xn--mnchen-3ya.de")
        #expect(Punycode.asciiHost("例え.テスト") == "xn--r8jz45g.xn--zckzah")
        #expect(Punycode.asciiHost("plain.example") == nil)
        // As curl sends them: a name typed decomposed (NFD) is the same name; a full-width dot is a dot.
        #expect(Punycode.asciiHost("bu\u{308}cher.example") == "xn--bcher-kva.example")
        #expect(Punycode.asciiHost("bücher\u{3002}example") == "xn--bcher-kva.example")
        // Without libidn2, the same encoding of a name already composed.
        #expect(Punycode.encodedHere("bücher.example") == "xn--bcher-kva.example")
        #expect(Punycode.encode(Array("ليهمابتكلموشعربي؟".unicodeScalars.map(\.value))) == "egbpdaj6bu4bxfgehfvwxn")
    }

    /// The shortcut that leaves a normal URL as it is agrees with the whole rebuild, over URLs
    /// made of every kind of part (scheme case, user information, host, port, path, query).
    @Test func theShortcutForNormalURLsAgreesWithTheRebuildOverEveryCombination() {
        let schemes = ["http", "https", "HTTP", "Https", "ftp", "htt"]
        let users = ["", "u:p@", "U@"]
        let hosts = ["host", "Host", "127.0.0.1", "[::1]", "[::FFFF:1]", "h%41", "h-1.example", "bücher.example"]
        let ports = ["", ":", ":80", ":443", ":8080", ":080", ":8a", ":1:2"]
        let paths = ["", "/", "/a.png", "/./a", "/a/..", "/.a/..b", "/a%2e", "/é", "/a/b/", "/a?", "?q", "#f", "/a?x=%7e#y"]
        var checked = 0
        for scheme in schemes {
            for user in users {
                for host in hosts {
                    for port in ports {
                        for path in paths {
                            let url = scheme + "://" + user + host + port + path
                            #expect(URLText.normalized(url) == URLText.rebuilt(url), "\(url)")
                            checked += 1
                        }
                    }
                }
            }
        }
        #expect(checked == 6 * 3 * 8 * 8 * 13)
    }
}
