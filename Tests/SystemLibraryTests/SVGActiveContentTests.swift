@testable import ImgCacheCore
import Testing

/// What `--keep-svg` passes through: an SVG with nothing that runs or loads when it is opened on
/// its own. Each hostile construct is found, however it is spelled; pictures stay inert.
@Suite struct SVGActiveContentTests {
    static func svg(_ body: String, prolog: String = "") -> [UInt8] {
        Array((prolog + "<svg xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\" width=\"10\" height=\"10\">"
               + body + "</svg>").utf8)
    }

    @Test(arguments: [
        "<script>alert(1)</script>", "<svg:script xmlns:svg=\"http://www.w3.org/2000/svg\">alert(1)</svg:script>", "<SCRIPT>x</SCRIPT>",
        "<rect width=\"1\" height=\"1\" onload=\"alert(1)\"/>", "<rect ONCLICK='x'/>", "<g x:onload=\"y\"/>",
        "<foreignObject><div xmlns=\"http://www.w3.org/1999/xhtml\">x</div></foreignObject>",
        "<a href=\"http://example.com/\"><rect/></a>", "<a xlink:href=\"//example.com/\"><rect/></a>",
        "<a href=\"&#106;avascript:alert(1)\"><rect/></a>", "<a href=\" javascript:alert(1)\"><rect/></a>",
        "<set attributeName=\"onclick\" to=\"alert(1)\"/>", "<animate attributeName=\"xlink:href\" values=\"#a;#b\"/>",
        "<image href=\"photo.png\" width=\"5\" height=\"5\"/>", "<use href=\"other.svg#icon\"/>", "<feImage href=\"http://x/y.png\"/>",
        "<rect style=\"fill: url( 'http://example.com/p.svg#x')\"/>", "<style>@import \"theme.css\";</style>",
        "<g xmlns:h=\"http://www.w3.org/1999/xhtml\"><h:img src=\"x\"/></g>", "<g xmlns:h=\"http&#58;//www.w3.org/1999/xhtml\"/>",
        "<iframe src=\"#x\"/>", "<embed/>", "<handler type=\"application/ecmascript\">x</handler>",
        // References spelled so that a plain search misses them: character references, CSS escapes,
        // CDATA, comments and processing instructions splitting a word, image-set().
        "<style>&#64;import \"http://x/a.css\";</style>", "<style>@&#105;mport \"http://x/a.css\";</style>",
        "<style>@\\69mport \"http://x/a.css\";</style>", "<style>@im<![CDATA[port \"http://x/a.css\";]]></style>",
        "<style>@im<!-- -->port \"http://x/a.css\";</style>", "<rect style=\"fill:&#117;rl(http://x/p.svg#g)\"/>",
        "<rect fill=\"url&#40;http://x/p.svg#g)\"/>", "<rect style=\"fill:\\75rl(http://x/p.svg#g)\"/>",
        "<style>rect { fill: u<![CDATA[rl(http://x/p.svg#g)]]> }</style>", "<style>rect { fill: u<?x?>rl(http://x/p.svg#g) }</style>",
        "<rect style=\"mask-image:image-set('http://x/m.png' 1x)\"/>", "<rect style=\"cursor:-webkit-image-set('http://x/c.png' 1x),auto\"/>",
    ])
    func activeContentIsFound(body: String) {
        #expect(SVGActiveContent.find(in: Self.svg(body)) != nil, "\(body)")
    }

    @Test func declarationsAndStyleSheetsAreFound() {
        #expect(SVGActiveContent.find(in: Self.svg("<text>&x;</text>", prolog: "<!DOCTYPE svg [<!ENTITY x \"<script>alert(1)</script>\">]>")) != nil)
        #expect(SVGActiveContent.find(in: Self.svg("<rect/>", prolog: "<?xml-stylesheet href=\"evil.css\" type=\"text/css\"?>")) != nil)
        // An attribute list gives every element a handler by default.
        #expect(SVGActiveContent.find(in: Self.svg("<rect/>", prolog: "<!DOCTYPE svg [<!ATTLIST svg onload CDATA \"alert(1)\">]>")) != nil)
        #expect(SVGActiveContent.find(in: Self.svg("<a href=\"&u;\"><rect/></a>", prolog: "<!DOCTYPE svg [<!ENTITY u \"http://x/\">]>")) != nil)
        // Entities of plain text, as illustration editors write them, are inert.
        #expect(SVGActiveContent.find(in: Array(("<!DOCTYPE svg [<!ENTITY ns_svg \"http://www.w3.org/2000/svg\"><!ENTITY c \"#30a050\">]>"
                                                 + "<svg xmlns=\"&ns_svg;\"><rect fill=\"&c;\"/></svg>").utf8)) == nil)
        // An entity that spells part of a word with what follows it.
        #expect(SVGActiveContent.find(in: Self.svg("<style>&at;import \"http://x/a.css\";</style>", prolog: "<!DOCTYPE svg [<!ENTITY at \"@\">]>")) != nil)
        #expect(SVGActiveContent.find(in: Self.svg("<rect fill=\"&u;rl(http://x/p.svg#g)\"/>", prolog: "<!DOCTYPE svg [<!ENTITY u \"u\">]>")) != nil)
        #expect(SVGActiveContent.find(in: Array(("<!DOCTYPE svg [<!ENTITY ns \"http://www.w3.org/1999/xhtml\">]>"
                                                 + "<svg xmlns=\"http://www.w3.org/2000/svg\" xmlns:h=\"&ns;\"/>").utf8)) != nil)
    }

    @Test(arguments: [
        "<rect width=\"5\" height=\"5\" fill=\"red\"/>", "<defs><linearGradient id=\"g\"/></defs><rect fill=\"url(#g)\"/>",
        "<use href=\"#g\"/><use xlink:href=\"#g\"/>", "<image href=\"data:image/png;base64,iVBORw0KGgo=\" width=\"1\" height=\"1\"/>",
        "<!-- <script>alert(1)</script> --><rect/>", "<title>on the road</title><desc>javascript is a language</desc>",
        "<g data-onion=\"1\" stroke-width=\"2\"/>", "<style>rect { fill: url(\"#g\") }</style>",
        "<metadata><rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\"><cc:Work xmlns:cc=\"http://creativecommons.org/ns#\"/></rdf:RDF></metadata>",
    ])
    func picturesAreInert(body: String) {
        #expect(SVGActiveContent.find(in: Self.svg(body, prolog: "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE svg>")) == nil, "\(body)")
    }

    /// An encoding a browser reads otherwise than as bytes hides what the rules look for: ISO-2022-JP's
    /// escapes decode to nothing, so `scr<ESC>(Bipt` is a script. Such SVGs are not inert; UTF-8 and
    /// Latin-1 declarations are.
    @Test func markupInAnEncodingABrowserReadsOtherwiseIsNotInert() {
        let script = "<scr\u{1B}(Bipt>document.title=1</scr\u{1B}(Bipt>"
        for prolog in ["<?xml version=\"1.0\" encoding=\"ISO-2022-JP\"?>", "", "<?xml version='1.0' encoding='utf-8'?>"] {
            #expect(SVGActiveContent.find(in: Self.svg(script, prolog: prolog)) != nil, "\(prolog)")
            #expect(SVGActiveContent.find(in: Self.svg("<rect o\u{1B}(Bnload=\"x\"/>", prolog: prolog)) != nil, "\(prolog)")
        }
        for encoding in ["ISO-2022-JP", "Shift_JIS", "UTF-16", "utf-7", "EBCDIC-US", " utf-8", "x-user-defined"] {
            let found = SVGActiveContent.find(in: Self.svg("<rect/>", prolog: "<?xml version=\"1.0\" encoding = \"\(encoding)\"?>"))
            #expect(found?.contains("encoding") == true, "\(encoding): \(String(describing: found))")
        }
        for encoding in ["UTF-8", "utf-8", "US-ASCII", "ISO-8859-1", "windows-1252"] {
            #expect(SVGActiveContent.find(in: Self.svg("<rect/>", prolog: "\u{FEFF}<?xml version=\"1.0\" encoding=\"\(encoding)\"?>")) == nil, "\(encoding)")
        }
        // Latin-1 with a byte past ASCII: a browser opens it, but shows it in no page's <img>.
        let cafe = Array("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><svg xmlns=\"http://www.w3.org/2000/svg\"><text>caf".utf8) + [0xE9]
            + Array("</text></svg>".utf8)
        #expect(SVGActiveContent.find(in: cafe)?.contains("bytes past ASCII") == true)
        let utf8 = Array("<?xml version=\"1.0\" encoding=\"UTF-8\"?><svg xmlns=\"http://www.w3.org/2000/svg\"><text>café</text></svg>".utf8)
        #expect(SVGActiveContent.find(in: utf8) == nil)
        // No declaration, or UTF-8 declared, and a byte that is not UTF-8: shown in no page either.
        for prolog in ["", "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"] {
            let raw = Array((prolog + "<svg xmlns=\"http://www.w3.org/2000/svg\"><title>Caf").utf8) + [0xE9] + Array("</title></svg>".utf8)
            #expect(SVGActiveContent.find(in: raw)?.contains("not UTF-8") == true, "\(prolog)")
        }
    }

    @Test func theFixturesEditorsWriteAreInert() throws {
        for name in ["formats/editor.svg", "formats/shapes.svg"] {
            #expect(SVGActiveContent.find(in: try DecoderTests.bytes(name)) == nil, "\(name)")
        }
    }
}
