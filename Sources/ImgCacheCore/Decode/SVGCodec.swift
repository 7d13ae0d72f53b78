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
    let decodeMemoryFactor = 4.0

    /// The size browsers give an SVG that says none (CSS's default replaced element).
    static let defaultSize = (width: 300, height: 150)
    /// Bytes the document may grow to once its entities are expanded.
    static let maximumExpansion = 4 << 20

    /// An XML or bare `<svg` document: optional BOM, whitespace, XML declaration,
    /// comments and doctype, then an `<svg` element.
    func recognizes(_ bytes: [UInt8]) -> Bool {
        // Nothing that is not markup is decoded as text. The root element may start anywhere: a
        // whole document is read through its prolog (a download's first bytes, up to `prologLength`).
        guard SVGCodec.startsLikeMarkup(bytes) else { return false }
        return rootElementStart(String(decoding: bytes, as: UTF8.self)) != nil
    }

    /// Markup whose prolog has not ruled out an `<svg` root yet.
    func mayStart(with prefix: [UInt8]) -> Bool {
        guard SVGCodec.startsLikeMarkup(prefix) else { return false }
        if case .notSVG = SVGCodec.scanProlog(String(decoding: prefix, as: UTF8.self)) { return false }
        return true
    }

    /// Whether `bytes` start with "<", after a byte-order mark and whitespace.
    static func startsLikeMarkup(_ bytes: [UInt8]) -> Bool {
        let text = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? bytes.dropFirst(3) : bytes[...]
        return text.first(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }) == UInt8(ascii: "<")
    }

    /// How much of a download's prolog is read as it arrives: editors write long comments and
    /// doctypes with entity declarations before the root element. A longer prolog is read whole
    /// once the download ends.
    static let prologLength = 64 * 1024

    /// Where the root `<svg` element starts, after the prolog.
    private func rootElementStart(_ document: String) -> Substring? {
        if case .root(let root) = SVGCodec.scanProlog(document) { return root }
        return nil
    }

    /// What a document's prolog leads to: an `<svg` root, another element (no SVG), or the end
    /// of the text before either (more of it could tell).
    enum PrologScan {
        case root(Substring)
        case notSVG
        case undecided
    }

    static func scanProlog(_ document: String) -> PrologScan {
        var text = Substring(document)
        if text.hasPrefix("\u{FEFF}") { text = text.dropFirst() }
        for _ in 0..<64 {
            text = text.drop(while: { $0.isWhitespace })
            if text.hasPrefix("<svg") || isPrefixedRoot(text) { return .root(text) }
            // Too short to tell yet: "<sv", "<!-" and the like.
            if text.prefix(10).count < 10, ["<svg", "<?", "<!--", "<!DOCTYPE"].contains(where: { $0.hasPrefix(text) || text.hasPrefix($0) }) {
                return .undecided
            }
            let closers: [(String, String)] = [("<?", "?>"), ("<!--", "-->"), ("<!DOCTYPE", "]>"), ("<!", ">")]
            guard let (opener, closer) = closers.first(where: { text.hasPrefix($0.0) }) else {
                // A namespace prefix ("<svg:svg", "<s:svg") is told from its name, which may be cut.
                return text.hasPrefix("<") && !text.dropFirst().contains(where: { $0 == ">" || $0.isWhitespace }) ? .undecided : .notSVG
            }
            // A doctype with an internal subset ends at "]>", one without at ">".
            let end = opener == "<!DOCTYPE" && text.prefix(while: { $0 != ">" }).contains("[")
                ? text.firstRange(of: closer) : text.firstRange(of: opener == "<!DOCTYPE" ? ">" : closer)
            guard let end else { return .undecided }
            text = text[end.upperBound...]
        }
        return .notSVG
    }

    func probe(_ bytes: [UInt8]) throws(ImageHeader.ProbeError) -> ImageHeader {
        // Refused from its header, so such a document is never stored: its entities are measured first.
        if let problem = SVGEntities.problem(in: bytes, limit: SVGCodec.maximumExpansion) { throw .corrupt(format, problem) }
        let document = String(decoding: bytes, as: UTF8.self)
        guard let root = rootElementStart(document), let close = root.firstIndex(of: ">") else {
            throw .corrupt(format, "the document ends inside its root element")
        }
        let size = try intrinsicSize(of: root[..<close])
        var header = ImageHeader(format: format, width: size.width, height: size.height, frameCount: 1, hasAlpha: true)
        // An image inside it is decoded at its own size, whatever size it is drawn at: the pixel limit counts that.
        do {
            if let embedded = try SVGEmbeddedImages.largest(in: document),
               Double(embedded.width) * Double(embedded.height) > Double(size.width) * Double(size.height) {
                header.codedWidth = embedded.width
                header.codedHeight = embedded.height
            }
        } catch {
            switch error { case .unreadable(let reason): throw .corrupt(format, reason) }
        }
        return header
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
    static func isPrefixedRoot(_ text: Substring) -> Bool {
        guard text.hasPrefix("<"), let colon = text.prefix(64).firstIndex(of: ":") else { return false }
        let prefix = text[text.index(after: text.startIndex)..<colon]
        return !prefix.isEmpty && prefix.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" || $0 == "." })
            && text[text.index(after: colon)...].hasPrefix("svg")
            && text[text.index(after: colon)...].dropFirst(3).first.map { $0.isWhitespace || $0 == ">" || $0 == "/" } == true
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
        let document = String(decoding: bytes, as: UTF8.self)
        if let root = rootElementStart(document), let close = root.firstIndex(of: ">"), root[..<close].hasSuffix("/"),
           root[root.index(after: close)...].allSatisfy({ $0.isWhitespace }) {
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
        if let problem = SVGEntities.problem(in: bytes, limit: SVGCodec.maximumExpansion) { throw .corrupt(format, problem) }
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

/// The entities an SVG document declares, measured before it is parsed: a
/// reference to an outside entity is refused, and so is a document that would
/// grow past a limit once its entities are expanded ("a billion laughs").
enum SVGEntities {
    /// The internal entities `text` declares, by name (the first declaration of a name counts, as in XML).
    static func values(in text: String) -> [String: String] {
        var values: [String: String] = [:]
        var rest = Substring(text)
        while let start = rest.firstRange(of: "<!ENTITY"), values.count <= 1000 {
            rest = rest[start.upperBound...]
            let words = rest.prefix(while: { $0 != ">" })
            let tokens = words.split(whereSeparator: { $0.isWhitespace })
            guard let name = tokens.first, !name.hasPrefix("%"),
                  let open = words.firstIndex(where: { $0 == "\"" || $0 == "'" }) else { continue }
            let quote = words[open]
            let value = words[words.index(after: open)...].prefix(while: { $0 != quote })
            if values[String(name)] == nil { values[String(name)] = String(value) }
        }
        return values
    }

    static func problem(in bytes: [UInt8], limit: Int) -> String? {
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.contains("<!ENTITY") else { return nil }
        var values: [String: String] = [:]
        var rest = Substring(text)
        while let start = rest.firstRange(of: "<!ENTITY") {
            rest = rest[start.upperBound...]
            let words = rest.prefix(while: { $0 != ">" })
            let tokens = words.split(whereSeparator: { $0.isWhitespace })
            guard let name = tokens.first else { return "an entity without a name" }
            if name == "%" || name.hasPrefix("%") { return "it declares an outside or parameter entity (\(tokens.dropFirst().first ?? name))" }
            if tokens.dropFirst().first.map({ $0 == "SYSTEM" || $0 == "PUBLIC" || $0 == "%" }) == true {
                return "it declares an outside or parameter entity (\(name))"
            }
            guard let open = words.firstIndex(where: { $0 == "\"" || $0 == "'" }) else { return "entity \(name) has no value" }
            let quote = words[open]
            let value = words[words.index(after: open)...].prefix(while: { $0 != quote })
            values[String(name)] = String(value)
            if values.count > 1000 { return "it declares more than 1000 entities" }
        }
        // The size each entity expands to, references followed to a bounded depth.
        var sizes: [String: Int] = [:]
        func size(_ name: String, depth: Int) -> Int {
            if let known = sizes[name] { return known }
            guard depth < 16, let value = values[name] else { return depth < 16 ? name.count + 2 : Int.max / 4 }
            var total = 0
            for reference in references(in: Substring(value)) {
                total = min(Int.max / 4, total + size(reference, depth: depth + 1))
            }
            total = min(Int.max / 4, total + value.count)
            sizes[name] = total
            return total
        }
        var total = text.utf8.count
        let body = text.firstRange(of: "]>").map { text[$0.upperBound...] } ?? Substring(text)
        for reference in references(in: body) {
            total = min(Int.max / 4, total + size(reference, depth: 0))
            if total > limit { return "its entities expand past \(limit / (1 << 20)) MiB" }
        }
        return nil
    }

    /// The names of `&name;` references in `text` (character references left out).
    private static func references(in text: Substring) -> [String] {
        var names: [String] = []
        var rest = text
        while let amp = rest.firstIndex(of: "&") {
            rest = rest[rest.index(after: amp)...]
            let name = rest.prefix(while: { $0 != ";" && !$0.isWhitespace && $0 != "&" && $0 != "<" })
            if name.count < 128, !name.hasPrefix("#"), rest.dropFirst(name.count).first == ";" { names.append(String(name)) }
            if names.count > 1 << 20 { break }
        }
        return names
    }
}
