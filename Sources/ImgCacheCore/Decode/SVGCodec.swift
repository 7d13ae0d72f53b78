import CImgCacheShims

extension ImageFormat {
    public static let svg = ImageFormat(declaring: "svg")
}

/// SVG: stored as the document itself, its size read from the root
/// element's `width`, `height` and `viewBox`, rasterised by librsvg for a
/// thumbnail or a conversion. librsvg runs no script and, given the document
/// without a location, loads nothing outside it; entity expansion is bounded
/// here before it parses.
struct SVGCodec: ImageCodec {
    let format = ImageFormat.svg
    let fileExtensions = ["svg"]
    let mediaType = "image/svg+xml"
    let capabilities: CodecCapabilities = [.decode]
    let decodeMemoryFactor = 8.0

    /// The size browsers give an SVG that says none (CSS's default replaced element).
    static let defaultSize = (width: 300, height: 150)
    /// Bytes the document may grow to once its entities are expanded.
    static let maximumExpansion = 4 << 20

    /// An XML or bare `<svg` document: optional BOM, whitespace, XML declaration,
    /// comments and doctype, then an `<svg` element.
    func recognizes(_ bytes: [UInt8]) -> Bool {
        // Nothing that is not markup is read further. The root element may start anywhere: a
        // whole document is read through its prolog (a download's first bytes, up to `prologLength`).
        guard SVGCodec.startsLikeMarkup(bytes) else { return false }
        if case .root = SVGCodec.scanProlog(SVGMarkup(bytes)) { return true }
        return false
    }

    /// Markup whose prolog has not ruled out an `<svg` root yet.
    func mayStart(with prefix: [UInt8]) -> Bool {
        guard SVGCodec.startsLikeMarkup(prefix) else { return false }
        if case .notSVG = SVGCodec.scanProlog(SVGMarkup(prefix)) { return false }
        return true
    }

    /// Whether `bytes` start with "<", after a byte-order mark and whitespace.
    static func startsLikeMarkup(_ bytes: [UInt8]) -> Bool {
        let text = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? bytes.dropFirst(3) : bytes[...]
        return text.first(where: { !SVGMarkup.isSpace($0) }) == UInt8(ascii: "<")
    }

    /// How much of a download's prolog is read as it arrives: editors write long comments and
    /// doctypes with entity declarations before the root element. A longer prolog is read whole
    /// once the download ends.
    static let prologLength = 64 * 1024

    /// What a document's prolog leads to: an `<svg` root (where its `<` is), another element
    /// (no SVG), or the end of the text before either (more of it could tell).
    enum PrologScan: Equatable {
        case root(Int)
        case notSVG
        case undecided
    }

    static func scanProlog(_ markup: SVGMarkup) -> PrologScan {
        var index = markup.has("\u{FEFF}", at: 0) ? 3 : 0
        for _ in 0..<64 {
            index = markup.skippingSpace(from: index)
            if markup.has("<svg", at: index) || isPrefixedRoot(markup, at: index) { return .root(index) }
            // Too short to tell yet: "<sv", "<!-" and the like.
            if markup.count - index < 10, ["<svg", "<?", "<!--", "<!DOCTYPE"].contains(where: { markup.mayBe($0, at: index) }) {
                return .undecided
            }
            let openers = ["<?", "<!--", "<!DOCTYPE", "<!"]
            guard let opener = openers.first(where: { markup.has($0, at: index) }) else {
                // A namespace prefix ("<svg:svg", "<s:svg") is told from its name, which may be cut.
                guard markup.has("<", at: index) else { return .notSVG }
                var name = index + 1
                while name < markup.count, markup.bytes[name] != UInt8(ascii: ">"), !SVGMarkup.isSpace(markup.bytes[name]) { name += 1 }
                return name == markup.count ? .undecided : .notSVG
            }
            let inside = index + opener.utf8.count
            let end: Int?
            switch opener {
            case "<?": end = markup.find("?>", from: inside).map { $0 + 2 }
            case "<!--": end = markup.find("-->", from: inside).map { $0 + 3 }
            case "<!DOCTYPE":
                // A doctype with an internal subset ends at "]>", one without at ">".
                guard let close = markup.find(byte: UInt8(ascii: ">"), from: inside) else { return .undecided }
                end = markup.find(byte: UInt8(ascii: "["), from: inside, before: close) == nil
                    ? close + 1 : markup.find("]>", from: inside).map { $0 + 2 }
            default: end = markup.find(byte: UInt8(ascii: ">"), from: inside).map { $0 + 1 }
            }
            guard let end else { return .undecided }
            index = end
        }
        return .notSVG
    }

    /// The root element's text, from its `<` to its `>` (left out).
    private func rootElement(_ markup: SVGMarkup) -> Range<Int>? {
        guard case .root(let root) = SVGCodec.scanProlog(markup),
              let close = markup.find(byte: UInt8(ascii: ">"), from: root) else { return nil }
        return root..<close
    }

    func probe(_ bytes: [UInt8]) throws(ImageHeader.ProbeError) -> ImageHeader {
        let markup = SVGMarkup(bytes)
        // Refused from its header, so such a document is never stored: its entities are measured first.
        if let problem = SVGEntities.problem(in: markup, limit: SVGCodec.maximumExpansion) { throw .corrupt(format, problem) }
        guard let root = rootElement(markup) else { throw .corrupt(format, "the document ends inside its root element") }
        let size = try intrinsicSize(of: Substring(markup.text(root)))
        var header = ImageHeader(format: format, width: size.width, height: size.height, frameCount: 1, hasAlpha: true)
        // An image inside it is decoded at its own size, whatever size it is drawn at: the pixel limit counts them all.
        do {
            header.embedded = try SVGEmbeddedImages.inventory(of: markup)
        } catch {
            switch error { case .unreadable(let reason): throw .corrupt(format, reason) }
        }
        return header
    }

    /// The size a document is drawn at (a document inside another: its own images are counted by the caller).
    func drawnSize(_ markup: SVGMarkup) -> (width: Int, height: Int)? {
        guard let root = rootElement(markup) else { return nil }
        return try? intrinsicSize(of: Substring(markup.text(root)))
    }

    /// Width and height in CSS pixels: the attributes' lengths, else the viewBox's
    /// (scaled to a length that is given), else 300 × 150.
    func intrinsicSize(of element: Substring) throws(ImageHeader.ProbeError) -> (width: Int, height: Int) {
        var box: (Double, Double)?
        if let text = attribute("viewBox", in: element) {
            let numbers: [Double] = text.split(whereSeparator: { $0 == "," || $0.isWhitespace }).compactMap { Double($0) }
            if numbers.count == 4, numbers[2] > 0, numbers[3] > 0 { box = (numbers[2], numbers[3]) }
        }
        // A negative length is an error browsers ignore: as if not given.
        var width = attribute("width", in: element).flatMap(pixels).flatMap { $0 < 0 ? nil : $0 }
        var height = attribute("height", in: element).flatMap(pixels).flatMap { $0 < 0 ? nil : $0 }
        if let box {
            if width == nil, let height { width = height * box.0 / box.1 }
            if height == nil, let width { height = width * box.1 / box.0 }
            width = width ?? box.0
            height = height ?? box.1
        }
        let w = width ?? Double(SVGCodec.defaultSize.width), h = height ?? Double(SVGCodec.defaultSize.height)
        guard w.isFinite, h.isFinite, w >= 0.5, h >= 0.5, w < 1e9, h < 1e9 else {
            throw .corrupt(format, "its size (\(w) × \(h)) is not drawable")
        }
        return (Int(w.rounded()), Int(h.rounded()))
    }

    /// An attribute's value in the root element's text.
    private func attribute(_ name: String, in element: Substring) -> String? {
        var rest = element
        while let found = rest.firstRange(of: name) {
            let before = rest[..<found.lowerBound].last
            var after = rest[found.upperBound...].drop(while: { $0.isWhitespace })
            rest = rest[found.upperBound...]
            guard before.map({ $0.isWhitespace }) == true, after.first == "=" else { continue }
            after = after.dropFirst().drop(while: { $0.isWhitespace })
            guard let quote = after.first, quote == "\"" || quote == "'" else { continue }
            return String(after.dropFirst().prefix(while: { $0 != quote }))
        }
        return nil
    }

    /// A length in CSS pixels; nil for a percentage or what does not parse.
    private func pixels(_ length: String) -> Double? {
        let text = SVGCodec.trimmed(Substring(length))
        let units: [(String, Double)] = [("px", 1), ("pt", 96.0 / 72), ("pc", 16), ("in", 96), ("cm", 96 / 2.54),
                                         ("mm", 96 / 25.4), ("em", 16), ("ex", 8)]
        for (unit, factor) in units where text.hasSuffix(unit) {
            return Double(SVGCodec.trimmed(text.dropLast(unit.count))).map { $0 * factor }
        }
        return text.hasSuffix("%") ? nil : Double(text)
    }

    /// A namespaced root, `<PREFIX:svg`.
    static func isPrefixedRoot(_ markup: SVGMarkup, at index: Int) -> Bool {
        guard markup.has("<", at: index),
              let colon = markup.find(byte: UInt8(ascii: ":"), from: index + 1, before: index + 64), colon > index + 1 else { return false }
        // A name's characters: ASCII letters, digits, "_-." and any byte of a non-ASCII letter.
        let isNameByte = { (byte: UInt8) -> Bool in
            byte >= 0x80 || (byte | 0x20 >= UInt8(ascii: "a") && byte | 0x20 <= UInt8(ascii: "z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || "_-.".utf8.contains(byte)
        }
        guard markup.bytes[(index + 1)..<colon].allSatisfy(isNameByte), markup.has("svg", at: colon + 1),
              colon + 4 < markup.count else { return false }
        let next = markup.bytes[colon + 4]
        return SVGMarkup.isSpace(next) || next == UInt8(ascii: ">") || next == UInt8(ascii: "/")
    }

    /// `text` without the white space around it.
    static func trimmed(_ text: Substring) -> String {
        String(text.drop(while: { $0.isWhitespace }).reversed().drop(while: { $0.isWhitespace }).reversed())
    }

    /// Whole when the root element is closed (or closes itself) and only comments and space follow.
    func missingEnd(of bytes: [UInt8]) -> String? {
        var text = Substring(String(decoding: bytes.suffix(4096), as: UTF8.self))
        while true {
            text = Substring(text.reversed().drop(while: { $0.isWhitespace || $0 == "\0" }).reversed())
            guard text.hasSuffix("-->"), let open = text.ranges(of: "<!--").last else { break }
            text = text[..<open.lowerBound]
        }
        // The last end tag closes the root: `</svg>`, or `</PREFIX:svg>` where the root is namespaced.
        if let close = text.ranges(of: "</").last {
            let tag = SVGCodec.trimmed(text[close.upperBound...])
            if tag.hasSuffix(">"), tag.dropLast().split(separator: ":").last.map({ SVGCodec.trimmed($0) == "svg" }) == true {
                return nil
            }
        }
        // A root that closes itself: `<svg .../>` with nothing else.
        let markup = SVGMarkup(bytes)
        if let root = rootElement(markup), root.upperBound > root.lowerBound, bytes[root.upperBound - 1] == UInt8(ascii: "/"),
           bytes[(root.upperBound + 1)...].allSatisfy({ SVGMarkup.isSpace($0) || $0 == 0 }) {
            return nil
        }
        return "the document ends before its closing </svg>"
    }

    func decode(_ bytes: [UInt8], header: ImageHeader, maximumPixels: PixelLimit,
                maximumFrames: Int) throws(ImageDecoder.DecodeError) -> DecodedImage {
        try decode(bytes, header: header, maximumPixels: maximumPixels, maximumFrames: maximumFrames,
                   atLeast: (header.width, header.height))
    }

    /// Drawn at the size that just covers `size`, its proportions kept: a vector
    /// is drawn at the size it is shown at rather than drawn and resampled.
    func decode(_ bytes: [UInt8], header: ImageHeader, maximumPixels: PixelLimit, maximumFrames: Int,
                atLeast size: (width: Int, height: Int)) throws(ImageDecoder.DecodeError) -> DecodedImage {
        if let problem = SVGEntities.problem(in: SVGMarkup(bytes), limit: SVGCodec.maximumExpansion) { throw .corrupt(format, problem) }
        let scale = max(Double(size.width) / Double(header.width), Double(size.height) / Double(header.height))
        let width = max(1, Int((Double(header.width) * scale).rounded())), height = max(1, Int((Double(header.height) * scale).rounded()))
        guard maximumPixels.allows(width: width, height: height) else {
            throw .tooManyPixels(width: width, height: height, limit: maximumPixels)
        }
        let drawn = ImageHeader(format: format, width: width, height: height, frameCount: 1, hasAlpha: true)
        return try CodecShim.decode(bytes, header: drawn, maximumPixels: maximumPixels, maximumFrames: 1) {
            data, count, limit, _, image, message, messageSize in
            ic_svg_render(data, count, UInt32(width), UInt32(height), Double(header.width), Double(header.height),
                          limit, image, message, messageSize)
        }
    }
}
