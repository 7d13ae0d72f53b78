import ImgCacheCore
import Testing

@Suite struct RemoteURLTests {
    @Test func unicodeHostsAndHugeURLsGiveValidFileNames() throws {
        // An IDN host is sent in its IDNA form (libcurl refuses it raw); the file name is the MD5 either way.
        let idn = try RemoteURL(parsing: "http://bücher.example/ä.png")
        #expect(idn.host == "xn--bcher-kva.example" && idn.string == "http://xn--bcher-kva.example/ä.png")
        let key = CacheKey(idn.string)
        #expect(key.fileName.count == 32 + 4 && key.fileName.hasSuffix(".png"))
        let huge = CacheKey("http://h/" + String(repeating: "a", count: 8 * 1024) + ".jpg?" + String(repeating: "q", count: 8 * 1024))
        #expect(huge.fileName.count == 32 + 4 && huge.fileName.allSatisfy { $0.isASCII && ($0.isHexDigit || $0 == "." || $0 == "j" || $0 == "p" || $0 == "g") })
        // Control characters and spaces anywhere are refused, NUL included.
        for bad in ["http://h/a\u{0}.png", "http://h/a b.png", "http://h/a\r\n.png", "http://h\t/a.png", "http://h/\u{9B}31m.png"] {
            #expect(throws: RemoteURL.ParseError.self) { try RemoteURL(parsing: bad) }
        }
    }

    /// The byte-level reading of common URLs answers as the full parse does, over URLs made of the
    /// pieces that decide a parse (scheme case, user information, IPv6 brackets, ports at and past
    /// their bounds, controls, bytes past ASCII), and says nothing of any other.
    @Test func thePlainURLReadingAgreesWithTheFullParse() throws {
        let schemes = ["http://", "https://", "HTTP://", "hTTpS://", "httpx://", "http:/", "http:", "ftp://", ""]
        let authorities = ["h", "Example.com", "h:80", "h:0", "h:65535", "h:65536", "h:0080", "h:", "h:8x", ":80", "",
                           "u@h", "u:p@h:1", "[::1]", "[::1]:8080", "h]", "a:b:80", "h\u{7F}", "h h", "bü.example", "h\t"]
        let rests = ["", "/", "/a.png", "?q=1", "#f", "/a b", "/ä.png", "/a\u{0}", "/%20?x#y", "//"]
        var plain = 0
        for scheme in schemes {
            for authority in authorities {
                for rest in rests {
                    let text = scheme + authority + rest
                    let full = Result { () throws(RemoteURL.ParseError) in try RemoteURL(checkingEveryCase: text) }
                    guard let fast = RemoteURL.plainASCII(text) else { continue }
                    plain += 1
                    #expect(full == .success(fast), "\(text)")
                }
            }
        }
        #expect(plain > 150)
    }

    /// Fullwidth `：＠／＃？` map to ASCII delimiters in a host's IDNA form: refused, never another port,
    /// user or path than the URL shows.
    @Test func aHostWhoseInternationalFormGainsURLSyntaxIsRefused() throws {
        for text in ["http://127.0.0.1\u{FF1A}20880/a.png", "http://127.0.0.1\u{FF1A}20880\u{FF03}.allowed.example:20810/a.png",
                     "http://allowed.example\u{FF20}127.0.0.1\u{FF1A}20880/a.png", "http://h\u{FF0F}x/a.png", "http://h\u{FF1F}x/a.png"] {
            #expect(throws: RemoteURL.ParseError.self, "\(text)") { try RemoteURL(parsing: text) }
        }
        #expect(try RemoteURL(parsing: "http://bücher.example:8080/a.png").host == "xn--bcher-kva.example")
        // Nor does its key become the plain URL's (a hit is answered without a parse).
        #expect(URLText.normalized("http://127.0.0.1\u{FF1A}20880/a.png") != URLText.normalized("http://127.0.0.1:20880/a.png"))
    }

    @Test func acceptsHTTPAndHTTPS() throws {
        let url = try RemoteURL(parsing: "HTTPS://user:pw@Example.com:8443/a.png?x=1")
        #expect(url.scheme == "https")
        #expect(url.host == "Example.com")
        #expect(try RemoteURL(parsing: "http://[::1]:8080/a.png").host == "[::1]")
    }

    @Test func refusesOtherSchemesAndMalformedText() {
        #expect(throws: RemoteURL.ParseError.unsupportedScheme("ftp")) { try RemoteURL(parsing: "ftp://h/a.png") }
        #expect(throws: RemoteURL.ParseError.unsupportedScheme("file")) { try RemoteURL(parsing: "file:///etc/passwd") }
        for text in ["", "h/a.png", "http:/a", "http://", "http://h:0/", "http://h:x/", "http://h/a b", "http://h/\r\n", "://h", "http://[::1/"] {
            #expect(throws: (any Error).self, "\(text)") { try RemoteURL(parsing: text) }
        }
    }

    @Test func redactionHidesUserInformation() {
        #expect(RemoteURL.redacted("https://u:p@h/x@y") == "https://***@h/x@y")
        #expect(RemoteURL.redacted("https://h/a?u=p@x") == "https://h/a?u=p@x")
        #expect(RemoteURL.redacted("not a url") == "not a url")
    }
}
