import Foundation
import ImgCacheCore
import Testing

/// ThumbHash, dominant colour and the pieces of page markup, checked against
/// what they must give.
@Suite struct PlaceholderTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/thumbhash")

    /// `expected.txt` holds what the published reference encoder (evanw/thumbhash, swift/ThumbHash.swift
    /// at a652ce6) gives for each fixture's pixels (`NAME-WxH.rgba`: straight RGBA, rows top to bottom):
    /// opaque, transparent, soft-edged, tall, wide and one pixel.
    @Test func theThumbHashIsTheReferenceEncodersForEveryFixture() throws {
        let expected = try String(contentsOf: PlaceholderTests.fixtures.appendingPathComponent("expected.txt"), encoding: .utf8)
        var checked = 0
        for line in expected.split(separator: "\n") {
            let parts = line.split(separator: " ")
            let name = String(parts[0])
            let size = name.split(separator: "-").last!.split(separator: ".")[0].split(separator: "x").map { Int($0)! }
            let pixels = [UInt8](try Data(contentsOf: PlaceholderTests.fixtures.appendingPathComponent(name)))
            let hash = ThumbHash.encode(pixels[...], width: size[0], height: size[1])
            #expect(Base64.encoded(hash) == String(parts[1]), "\(name)")
            checked += 1
        }
        #expect(checked == 6)
    }

    @Test func theDominantColourIsTheLargestAreaNotTheAverage() {
        // Three quarters blue, a quarter red: blue, where the average would be purple.
        var pixels: [UInt8] = []
        for index in 0..<100 { pixels += index < 75 ? [20, 40, 220, 255] : [230, 10, 10, 255] }
        #expect(ImagePlaceholder(of: pixels[...], width: 10, height: 10).dominantColor.description == "#1428dc")
        // Transparent pixels weigh nothing, whatever colour they hide.
        var logo: [UInt8] = []
        for index in 0..<100 { logo += index < 90 ? [255, 255, 255, 0] : [0, 200, 0, 255] }
        #expect(ImagePlaceholder(of: logo[...], width: 10, height: 10).dominantColor.description == "#00c800")
    }

    @Test func base64RoundTrips() {
        for length in 0..<9 {
            let bytes = (0..<length).map { UInt8(($0 * 97 + 13) & 255) }
            #expect(Base64.decoded(Base64.encoded(bytes)) == bytes)
        }
        #expect(Base64.encoded(Array("Man".utf8)) == "TWFu")
        #expect(Base64.encoded(Array("Ma".utf8)) == "TWE=")
    }

    @Test func copyNamesFollowTheirTemplate() throws {
        let values = CopyNameTemplate.Values(stem: "my photo", format: .webp, width: 320, height: 213,
                                             hash: "0123456789abcdef" + String(repeating: "0", count: 48), urlHash: "feedbeef")
        #expect(CopyNameTemplate.standard.name(values) == "my photo-320.01234567.webp")
        #expect(try CopyNameTemplate(parsing: "{width}/{stem}.{urlhash8}.{ext}").name(values) == "320/my photo.feedbeef.webp")
        #expect(try CopyNameTemplate(parsing: "{format}/{stem}-{width}x{height}.{ext}").name(values) == "webp/my photo-320x213.webp")
        #expect(try !CopyNameTemplate(parsing: "{stem}.{ext}").namesContent)
        // And the extension is always the copy's own: a name ends with {ext}.
        for bad in ["{stem", "{size}.{ext}", "/abs/{stem}.{ext}", "../{stem}.{ext}", "a//{stem}", "", "x}.{ext}", "{stem}.png", "{stem}.{ext}.htm"] {
            #expect(throws: ValueError.self, "\(bad)") { try CopyNameTemplate(parsing: bad) }
        }
    }

    @Test func pageAddressesAreRelativeToTheSiteOrUnderThePrefix() {
        #expect(PageAddress(siteRoot: "/site").address(of: "/site/img/a b,c.webp") == "img/a%20b%2Cc.webp")
        #expect(PageAddress(siteRoot: "/site/blog").address(of: "/site/img/a.webp") == "../img/a.webp")
        #expect(PageAddress(urlPrefix: "/img", base: "out/img").address(of: "out/img/a.webp") == "/img/a.webp")
        #expect(PageAddress(siteRoot: "out", urlPrefix: "https://cdn.example/").address(of: "out/img/a.webp")
                == "https://cdn.example/img/a.webp")
        #expect(PageAddress().address(of: "/cache/ab/x.png") == "/cache/ab/x.png")
    }

    @Test func markupEscapesWhatItQuotes() {
        let markup = PictureMarkup(alt: "Tom & \"Jerry\" <b>", sizes: "(min-width: 600px) 50vw, 100vw")
        let html = markup.picture([.init(address: "a.webp", width: 320, height: 200, format: .webp, frameCount: 1),
                                   .init(address: "a.jpg", width: 320, height: 200, format: .jpeg, frameCount: 1),
                                   .init(address: "b.jpg", width: 640, height: 400, format: .jpeg, frameCount: 1)], animated: false)
        #expect(html == "<picture><source type=\"image/webp\" srcset=\"a.webp 320w\" sizes=\"(min-width: 600px) 50vw, 100vw\">"
                + "<img src=\"b.jpg\" srcset=\"a.jpg 320w, b.jpg 640w\" sizes=\"(min-width: 600px) 50vw, 100vw\" width=\"640\" height=\"400\" "
                + "alt=\"Tom &amp; &quot;Jerry&quot; &lt;b&gt;\" loading=\"lazy\" decoding=\"async\"></picture>")
    }

    /// Formats x animation: an animation's formats that kept no frames are left out, unless none kept them.
    @Test func anAnimationsStillFormatsAreLeftOut() {
        let formats: [ImageFormat] = [.avif, .webp, .gif, .jpeg, .png]
        let animates: Set<ImageFormat> = [.avif, .webp, .gif]
        for mask in 1..<(1 << formats.count) {
            let asked = formats.indices.filter { mask & (1 << $0) != 0 }.map { formats[$0] }
            for animated in [false, true] {
                let candidates = asked.map { format in
                    PictureMarkup.Candidate(address: "x.\(format.fileExtension)", width: 10, height: 10, format: format,
                                            frameCount: animated && animates.contains(format) ? 5 : 1)
                }
                let kept = PictureMarkup.groups(candidates, animated: animated).map { $0[0].format }
                let moving = asked.filter { animates.contains($0) }
                #expect(kept == (animated && !moving.isEmpty ? moving : asked), "\(asked) animated: \(animated)")
            }
        }
    }
}
