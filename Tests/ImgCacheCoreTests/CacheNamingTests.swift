import ImgCacheCore
import Testing

@Suite struct MD5Tests {
    @Test(arguments: [
        ("", "d41d8cd98f00b204e9800998ecf8427e"),
        ("a", "0cc175b9c0f1b6a831c399e269772661"),
        ("abc", "900150983cd24fb0d6963f7d28e17f72"),
        ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
        ("abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"),
        ("12345678901234567890123456789012345678901234567890123456789012345678901234567890",
         "57edf4a22be3c955ac49da2e2107b67a"),
    ])
    func rfc1321TestSuite(input: String, digest: String) {
        #expect(MD5.hex(input) == digest)
    }
}

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

@Suite struct EntryNameTests {
    @Test func anEntryIsNamedForItsBytesAndLookedForUnderEveryName() {
        let key = CacheKey("https://h/photo.jpeg")
        #expect(key.fileName(for: .jpeg) == key.digest + ".jpg")
        #expect(key.fileName(for: .webp) == key.digest + ".webp")
        // The URL's format first, then the other formats, then earlier versions' names.
        #expect(key.candidateFileNames == ["jpg", "png", "webp", "gif", "jpeg"].map { key.digest + "." + $0 } + [key.digest])
        let png = CacheKey("https://h/x.png")
        #expect(png.candidateFileNames.first == png.digest + ".png" && png.candidateFileNames.count == 5)
        let plain = CacheKey("https://h/image?id=3")
        #expect(plain.candidateFileNames.first == plain.digest + ".jpg")
        let php = CacheKey("https://h/image.php")
        #expect(php.candidateFileNames.suffix(2) == [php.digest + ".php", php.digest])
    }
}

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

@Suite struct RoughTimeTests {
    @Test(arguments: [(86_399.0, "1 day"), (84_600.0, "1 day"), (82_800.0, "23 hours"), (5_400.0, "2 hours"),
                      (100.0, "2 minutes"), (59.0, "1 minute"), (20.0, "20 seconds"), (0.2, "1 second"), (1_123_200.0, "2 weeks")]
          as [(Double, String)])
    func aSpanIsSaidInTheUnitItNearlyFills(seconds: Double, text: String) {
        #expect(TimeSpan(seconds: seconds).roughDescription == text)
    }
}

@Suite struct NamespaceTests {
    @Test(arguments: ["default", "thumbs", "a", "project-1", "v1.2_x", String(repeating: "n", count: 64)])
    func acceptsPlainNames(name: String) throws {
        #expect(try Namespace(validating: name).name == name)
    }

    @Test func refusesPathsAndOddNames() {
        #expect(throws: Namespace.ValidationError.empty) { try Namespace(validating: "") }
        #expect(throws: Namespace.ValidationError.leadingDot) { try Namespace(validating: "..") }
        #expect(throws: Namespace.ValidationError.leadingDot) { try Namespace(validating: "../x") }
        #expect(throws: Namespace.ValidationError.leadingDash) { try Namespace(validating: "-x") }
        #expect(throws: Namespace.ValidationError.invalidCharacter("/")) { try Namespace(validating: "a/b") }
        #expect(throws: Namespace.ValidationError.invalidCharacter("é")) { try Namespace(validating: "café") }
        #expect(throws: Namespace.ValidationError.tooLong(65)) { try Namespace(validating: String(repeating: "n", count: 65)) }
    }
}

@Suite struct CacheLocationTests {
    func resolve(_ directory: String? = nil, _ namespace: String? = nil, _ environment: [String: String]) throws -> CacheLocation {
        try CacheLocation.resolve(cacheDirectory: directory, namespace: namespace, environment: environment, currentDirectory: "/cwd")
    }

    @Test func precedenceOfRootSources() throws {
        let all = ["IMGCACHE_DIR": "/env", "XDG_CACHE_HOME": "/xdg", "HOME": "/home/u"]
        #expect(try resolve("/opt", nil, all).root == "/opt")
        #expect(try resolve(nil, nil, all).root == "/env")
        #expect(try resolve(nil, nil, ["XDG_CACHE_HOME": "/xdg", "HOME": "/home/u"]).root == "/xdg/imgcache")
        #expect(try resolve(nil, nil, ["XDG_CACHE_HOME": "rel", "HOME": "/home/u"]).root == "/home/u/.cache/imgcache")
        #expect(try resolve(nil, nil, ["IMGCACHE_DIR": "", "HOME": "/home/u"]).root == "/home/u/.cache/imgcache")
        #expect(try resolve("rel/", nil, [:]).root == "/cwd/rel")
    }

    @Test func namespaceSources() throws {
        #expect(try resolve("/r", nil, [:]).directory == "/r/default")
        #expect(try resolve("/r", nil, ["IMGCACHE_NAMESPACE": "env"]).directory == "/r/env")
        #expect(try resolve("/r", "flag", ["IMGCACHE_NAMESPACE": "env"]).directory == "/r/flag")
    }

    @Test func failures() {
        #expect(throws: CacheLocation.ResolutionError.noHome) { try resolve(nil, nil, [:]) }
        #expect(throws: CacheLocation.ResolutionError.invalidNamespace(fromEnvironment: true, .invalidCharacter("/"))) {
            try resolve("/r", nil, ["IMGCACHE_NAMESPACE": "a/b"])
        }
    }
}

@Suite struct RemoteURLTests {
    @Test func unicodeHostsAndHugeURLsGiveValidFileNames() throws {
        // An IDN host is passed on (libcurl converts it); the file name is the MD5 either way.
        let idn = try RemoteURL(parsing: "http://bücher.example/ä.png")
        #expect(idn.host == "bücher.example")
        let key = CacheKey(idn.string)
        #expect(key.fileName.count == 32 + 4 && key.fileName.hasSuffix(".png"))
        let huge = CacheKey("http://h/" + String(repeating: "a", count: 8 * 1024) + ".jpg?" + String(repeating: "q", count: 8 * 1024))
        #expect(huge.fileName.count == 32 + 4 && huge.fileName.allSatisfy { $0.isASCII && ($0.isHexDigit || $0 == "." || $0 == "j" || $0 == "p" || $0 == "g") })
        // Control characters and spaces anywhere are refused, NUL included.
        for bad in ["http://h/a\u{0}.png", "http://h/a b.png", "http://h/a\r\n.png", "http://h\t/a.png", "http://h/\u{9B}31m.png"] {
            #expect(throws: RemoteURL.ParseError.self) { try RemoteURL(parsing: bad) }
        }
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
