import CImgCacheShims
import Glibc
import ImgCacheCore
@testable import ImgCacheServe
import Testing

/// imgproxy's URL format, signature and options, as its documentation and URL builders write them.
@Suite struct ImgproxyURLTests {
    @Test func thePlainAndTheEncodedFormsReadAlike() throws {
        let plain = try ImgproxyPath(parsing: "/sig/rs:fill:300:200:0/g:no/plain/http://example.com/images/a%20b.jpg@webp")
        #expect(plain.signature == "sig")
        #expect(plain.signedPart == "/rs:fill:300:200:0/g:no/plain/http://example.com/images/a%20b.jpg@webp")
        #expect(plain.options == [.init(name: "rs", arguments: ["fill", "300", "200", "0"]), .init(name: "g", arguments: ["no"])])
        #expect(plain.source == "http://example.com/images/a b.jpg")
        #expect(plain.fileExtension == "webp")
        // imgproxy's own example: the source in URL-safe base64, split by slashes.
        let encoded = try ImgproxyPath(parsing: "/sig/rs:fill:300:400:0/aHR0cDovL2V4YW1w/bGUuY29tL2ltYWdl/cy9jdXJpb3NpdHku/anBn.png")
        #expect(encoded.source == "http://example.com/images/curiosity.jpg")
        #expect(encoded.fileExtension == "png")
        let bare = try ImgproxyPath(parsing: "/_/plain/https://example.com/a.jpg")
        #expect(bare.options.isEmpty && bare.fileExtension == nil)
        for bad in ["", "nosignature", "/onlysig", "/s/rs:fit:1:1", "/s/plain/", "/s/plain/%zz", "/s/!!!notbase64"] {
            #expect(throws: ImgproxyPath.Problem.self, "\(bad)") { try ImgproxyPath(parsing: bad) }
        }
    }

    /// The key and salt of imgproxy's documentation; the signature as Python's hmac and base64
    /// modules make it, an implementation of their own.
    @Test func theSignatureIsHMACSHA256OfSaltAndPathInURLSafeBase64() throws {
        let pair = URLSignature.Pair(key: URLSignature.hexBytes("943b421c9eb07c830af81030552c86009268de4e532ba2ee2eab8247c6da0881")!,
                                     salt: URLSignature.hexBytes("520f986b998545b4785e0defbc4f3c1203f22de2374a3d53cb7a7fe9fea309c5")!)
        let signature = URLSignature(pairs: [pair])
        let path = "/rs:fill:300:400:0/g:sm/aHR0cDovL2V4YW1w/bGUuY29tL2ltYWdl/cy9jdXJpb3NpdHku/anBn.png"
        #expect(try signature.signature(of: path, with: pair) == "90UxdwGRAI2bpLSHKkZculJau5ahfxfS0h3fMuQAf40")
        #expect(try signature.accepts("90UxdwGRAI2bpLSHKkZculJau5ahfxfS0h3fMuQAf40", for: path))
        #expect(try !signature.accepts("90UxdwGRAI2bpLSHKkZculJau5ahfxfS0h3fMuQAf41", for: path))
        #expect(try !signature.accepts("90UxdwGRAI2bpLSHKkZculJau5ahfxfS0h3fMuQAf40", for: path + "x"))
        // Cut to IMGPROXY_SIGNATURE_SIZE bytes.
        let short = URLSignature(pairs: [pair], size: 8)
        #expect(try short.signature(of: path, with: pair) == Base64.urlEncoded(Array(Base64.urlDecoded("90UxdwGRAI2bpLSHKkZculJau5ahfxfS0h3fMuQAf40")!.prefix(8))))
        #expect(throws: URLSignature.Problem.self) { try URLSignature.pairs(keys: "aa,bb", salts: "cc") }
        #expect(throws: URLSignature.Problem.self) { try URLSignature.pairs(keys: "xyz", salts: "cc") }
        #expect(try URLSignature.pairs(fileText: "# rotation\naabb ccdd\n\neeff:0011\n").count == 2)
    }

    /// The rule, swept: every resizing type, size, enlarge and extend against what it must make.
    @Test func everyResizingCombinationMakesTheRightTransform() throws {
        let presets = PresetTable()
        for type in ProcessingOptions.ResizingType.allCases {
            for (width, height) in [(0, 0), (300, 0), (0, 200), (300, 200)] {
                for enlarge in [false, true] {
                    for extend in [false, true] {
                        let options = try ProcessingOptions([.init(name: "rs", arguments: [type.rawValue, "\(width)", "\(height)",
                                                                                          enlarge ? "1" : "0", extend ? "1" : "0"])],
                                                            fileExtension: nil, presets: presets)
                        let transform = options.transform(sourceSize: (400, 100), format: nil)
                        let both = width > 0 && height > 0
                        guard width > 0 || height > 0 else {
                            #expect(transform.thumbnail == nil)
                            continue
                        }
                        let expected: ImageTransform.Fit
                        switch type {
                        case .fit: expected = extend && both ? .contain : .inside
                        case .fill, .fillDown: expected = both ? .cover : .inside
                        case .force: expected = both ? .fill : .inside
                        // A wide source in a wide box fills.
                        case .auto: expected = both ? .cover : .inside
                        }
                        #expect(transform.fit == expected, "\(type) \(width)x\(height) el=\(enlarge) ex=\(extend)")
                        #expect(transform.upscale == enlarge)
                        #expect(transform.thumbnail?.width == (width > 0 ? width : nil) && transform.thumbnail?.height == (height > 0 ? height : nil))
                    }
                }
            }
        }
        // auto with a tall source in a wide box fits.
        let auto = try ProcessingOptions([.init(name: "rt", arguments: ["auto"]), .init(name: "s", arguments: ["300", "200"])],
                                         fileExtension: nil, presets: presets)
        #expect(auto.transform(sourceSize: (100, 400), format: nil).fit == .inside)
        let dpr = try ProcessingOptions([.init(name: "w", arguments: ["100"]), .init(name: "dpr", arguments: ["2"])], fileExtension: "webp", presets: presets)
        #expect(dpr.transform(sourceSize: nil, format: dpr.format).thumbnail?.width == 200)
        #expect(dpr.format == .webp)
    }

    @Test func optionsItDoesNotDoAreNamed() throws {
        let presets = try PresetTable(fileText: "thumb=rs:fill:100:100/q:70\nloop=pr:loop\n")
        for (name, arguments, words) in [("blur", ["5"], "blur"), ("rs", ["zoom", "1", "1"], "zoom"), ("g", ["sm"], "sm"),
                                         ("g", ["no", "10", "0"], "offsets"), ("q", ["101"], "quality"), ("sm", ["0"], "strip_metadata"),
                                         ("pr", ["nope"], "nope"), ("pr", ["loop"], "itself"), ("w", ["-1"], "w"), ("dpr", ["0"], "dpr"),
                                         ("f", ["exe"], "exe"), ("bg", ["300", "0", "0"], "bg")] {
            do {
                _ = try ProcessingOptions([.init(name: name, arguments: arguments)], fileExtension: nil, presets: presets)
                Issue.record("\(name) \(arguments) was taken")
            } catch {
                #expect(error.description.contains(words), "\(error.description)")
            }
        }
        let thumb = try ProcessingOptions([.init(name: "pr", arguments: ["thumb"])], fileExtension: nil, presets: presets)
        #expect(thumb.width == 100 && thumb.resizingType == .fill && thumb.quality == 70)
    }

    @Test func acceptPicksAVIFThenWebPForStillsAndKeepsAnimations() {
        let cases: [(String?, ImageFormat?, Bool, ImageFormat?)] = [
            ("image/avif,image/webp,*/*", .jpeg, false, .avif), ("image/webp,*/*", .jpeg, false, .webp), ("*/*", .jpeg, false, nil),
            (nil, .png, false, nil), ("image/avif;q=0, image/webp", .jpeg, false, .webp), ("IMAGE/AVIF", .png, false, .avif),
            ("image/avif,image/webp", .gif, true, .webp), ("image/avif", .gif, true, nil), ("image/webp", .webp, false, nil),
        ]
        for (accept, source, animated, expected) in cases {
            #expect(AcceptNegotiation.format(accept: accept, source: source, animated: animated) == expected, "\(accept ?? "nil") \(source!)")
        }
    }

    @Test func theMemoryTierStaysWithinItsBudgetDroppingTheLeastRecentlyUsed() {
        let tier = MemoryTier(budget: 8000)
        func item(_ size: Int) -> MemoryTier.Item {
            MemoryTier.Item(bytes: [UInt8](repeating: 1, count: size), contentType: "image/png", etag: "\"e\"", lastModified: "", path: "", inode: 0)
        }
        for index in 0..<20 {
            tier.insert(item(900), for: "k\(index)")
            _ = tier.item("k0")  // k0 kept hot
            #expect(tier.usage.bytes <= 8000)
        }
        #expect(tier.item("k0") != nil)
        #expect(tier.item("k1") == nil)
        #expect(tier.item("k19") != nil)
        tier.insert(item(5000), for: "big")  // over an eighth of the budget
        #expect(tier.item("big") == nil)
    }

    @Test func allowedSourcesMatchAsPrefixesWithWildcardsInOneSegment() throws {
        let policy = try SourcePolicy(prefixes: ["https://img.example.com/", "https://*.cdn.example.org/pics/"])
        let cases: [(String, Bool)] = [
            ("https://img.example.com/a.jpg", true), ("https://IMG.example.com/a.jpg", true), ("https://img.example.com.evil.net/a.jpg", false),
            ("https://img.example.com@evil.net/a.jpg", false), ("http://img.example.com/a.jpg", false),
            ("https://a.cdn.example.org/pics/x.png", true), ("https://evil.net/.cdn.example.org/pics/x.png", false),
            ("https://a.b.cdn.example.org/pics/x.png", true), ("https://a.cdn.example.org/other/x.png", false),
        ]
        for (url, allowed) in cases {
            #expect(policy.allows(try RemoteURL(parsing: url)) == allowed, "\(url)")
        }
        #expect(throws: SourcePolicy.Problem.self) { try SourcePolicy(prefixes: ["https://img.example.com"]) }
        #expect(throws: SourcePolicy.Problem.self) { try SourcePolicy(prefixes: ["img.example.com/"]) }
    }

    @Test func privateAddressesAreTheIANAOnes() {
        let v4: [(String, Bool)] = [("127.0.0.1", true), ("10.1.2.3", true), ("172.16.0.1", true), ("172.32.0.1", false), ("192.168.1.1", true),
                                    ("169.254.169.254", true), ("100.64.0.1", true), ("0.0.0.0", true), ("224.0.0.1", true),
                                    ("255.255.255.255", true), ("8.8.8.8", false), ("93.184.216.34", false), ("198.18.0.1", true),
                                    ("192.0.2.2", true), ("198.51.100.1", true), ("203.0.113.1", true), ("192.88.99.1", true), ("192.0.3.1", false)]
        for (text, isPrivate) in v4 {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            inet_pton(AF_INET, text, &address.sin_addr)
            let result = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { ic_address_is_private($0) } }
            #expect((result != 0) == isPrivate, "\(text)")
        }
        let v6: [(String, Bool)] = [("::1", true), ("::", true), ("fe80::1", true), ("fd00::1", true), ("ff02::1", true),
                                    ("::ffff:127.0.0.1", true), ("::ffff:8.8.8.8", false), ("64:ff9b::a00:1", true), ("2002:7f00:1::", true),
                                    ("2606:4700::1111", false), ("2001:db8::1", true), ("::ffff:0:7f00:1", true), ("::ffff:0:808:808", true)]
        for (text, isPrivate) in v6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            inet_pton(AF_INET6, text, &address.sin6_addr)
            let result = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { ic_address_is_private($0) } }
            #expect((result != 0) == isPrivate, "\(text)")
        }
    }
}
