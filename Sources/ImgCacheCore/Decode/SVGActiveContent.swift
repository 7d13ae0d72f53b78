/// What makes an SVG more than a picture when it is opened on its own (as a
/// page of the site it was copied to): script, event handlers, HTML inside
/// it, and references to other documents. `--keep-svg` passes an SVG through
/// only when it has none of these; the rules are a table, read as an XML
/// parser reads the markup, and they err on the side of finding something
/// (a reference written with character references is taken for an external one).
public enum SVGActiveContent {
    /// Elements that run script or embed other documents, by local name (whatever their prefix).
    static let activeElements: Set<String> = ["script", "foreignobject", "handler", "listener", "iframe", "embed", "object", "frame", "frameset"]
    /// Attributes whose value is a reference, by local name: allowed only to the document itself
    /// (`#id`) or an inline raster image (`data:image/…`).
    static let referenceAttributes: Set<String> = ["href", "src"]
    /// Namespaces whose elements a browser would treat as HTML.
    static let htmlNamespaces = ["http://www.w3.org/1999/xhtml"]

    /// Why the SVG file at `path` is not inert (as `find(in:)` says it), nil when it is; unreadable is not inert.
    public static func activeContent(at path: String) -> String? {
        guard let read = try? FileSystem.readFile(path, limit: Int(BodyVerifier.wholeReadLimit)), let bytes = Optional(read) ?? nil else {
            return "bytes that cannot be read"
        }
        return find(in: bytes)
    }

    /// Why `bytes` is not inert (the first thing found, said as "a <script> element"), or nil when it is.
    static func find(in bytes: [UInt8]) -> String? {
        if let problem = encodingProblem(of: bytes) { return problem }
        let lower = bytes.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
        let text = SVGMarkup(lower)
        let markup = SVGMarkup(bytes)
        let entities = SVGEntities.declarations(in: markup)
        if let problem = entities.problem { return problem }
        for range in entities.values.values where bytes[range].contains(where: { $0 == 0x3C || $0 == 0x26 || $0 == 0x25 }) {  // < & %
            return "an entity that holds markup or references"
        }
        if text.find("<?xml-stylesheet", from: 0) != nil { return "a style sheet processing instruction" }
        // The text as a browser's CSS and URL parsers get it: comments, CDATA marks and processing
        // instructions gone, entities and character references expanded, in lower case.
        let decoded = SVGMarkup(expanded(bytes, entities: entities))
        if decoded.find("@import", from: 0) != nil { return "a style sheet @import" }
        if decoded.find("javascript:", from: 0) != nil || decoded.find("vbscript:", from: 0) != nil { return "a script URL" }
        if decoded.find("image-set(", from: 0) != nil { return "a CSS image-set() (images from other documents)" }
        if decoded.find("expression(", from: 0) != nil || decoded.find("-moz-binding", from: 0) != nil { return "a CSS expression" }
        // An escape could spell any of these (`@\69mport`, `u\rl(`): none is needed in a picture.
        if decoded.find(byte: 0x5C, from: 0) != nil { return "a backslash (a CSS escape could spell a reference)" }
        if let problem = externalURLFunction(in: decoded) { return problem }
        var index = 0
        while let open = text.find(byte: 0x3C, from: index) {  // <
            if text.has("<!--", at: open) {
                guard let end = text.find("-->", from: open + 4) else { return nil }
                index = end + 3
                continue
            }
            if text.has("<![cdata[", at: open) {
                guard let end = text.find("]]>", from: open + 9) else { return nil }
                index = end + 3
                continue
            }
            if text.has("<!doctype", at: open) {
                // Its internal declarations may only be entities of plain text (checked above): an
                // attribute list could give every element an event handler by default.
                let close = text.find(byte: 0x3E, from: open) ?? text.count
                guard let subset = text.find(byte: 0x5B, from: open, before: close) else {  // [
                    index = close + 1
                    continue
                }
                guard let end = text.find("]", from: subset), let after = text.find(byte: 0x3E, from: end) else { return nil }
                var at = subset
                while let declaration = markup.find("<", from: at, before: end) {
                    guard markup.has("<!ENTITY", at: declaration) || markup.has("<!--", at: declaration) else {
                        return "a DOCTYPE with declarations other than entities"
                    }
                    at = declaration + 1
                }
                index = after + 1
                continue
            }
            guard let tag = Tag(text, at: open) else {
                index = open + 1
                continue
            }
            if activeElements.contains(tag.localName) { return "a <\(tag.name)> element" }
            for attribute in tag.attributes {
                if let problem = problem(of: attribute, bytes: bytes, entities: entities) { return problem }
            }
            index = tag.end
        }
        return nil
    }

    /// `bytes` with comments, CDATA marks and processing instructions left out, the declared and
    /// predefined entities and character references expanded (one past ASCII as `?`), in lower case.
    static func expanded(_ bytes: [UInt8], entities: SVGEntities.Declarations) -> [UInt8] {
        let markup = SVGMarkup(bytes)
        let predefined: [String: UInt8] = ["lt": 0x3C, "gt": 0x3E, "amp": 0x26, "quot": 0x22, "apos": 0x27]
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == 0x3C {  // <
                if markup.has("<!--", at: index) { index = (markup.find("-->", from: index + 4) ?? bytes.count) + 3; continue }
                if markup.has("<![CDATA[", at: index) { index += 9; continue }
                if markup.has("<?", at: index) { index = (markup.find("?>", from: index + 2) ?? bytes.count) + 2; continue }
            }
            if byte == 0x5D, markup.has("]]>", at: index) { index += 3; continue }
            if byte == 0x26, let end = markup.find(byte: 0x3B, from: index + 1, before: min(bytes.count, index + 64)) {  // & ... ;
                let name = String(decoding: bytes[(index + 1)..<end], as: UTF8.self)
                if name.hasPrefix("#") {
                    let digits = name.dropFirst()
                    let value = digits.first == "x" || digits.first == "X" ? UInt32(digits.dropFirst(), radix: 16) : UInt32(digits)
                    out.append(value.map { $0 < 0x80 ? UInt8($0) : 0x3F } ?? 0x3F)
                } else if let character = predefined[name] {
                    out.append(character)
                } else if let range = entities.values[name] {
                    out += bytes[range]
                } else {
                    out += bytes[index...end]
                }
                index = end + 1
                continue
            }
            out.append(byte)
            index += 1
        }
        return out.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
    }

    /// Whether the SVG file at `path` is inert; false when it cannot be read (it is then not passed through).
    /// Encodings whose markup is its bytes as the rules read them (ASCII bytes are the ASCII
    /// characters, nothing else becomes one): a browser reads any other declared encoding
    /// otherwise (ISO-2022-JP's escapes decode to nothing, so `scr<ESC>(Bipt` is `script`).
    static let utf8Names: Set<String> = ["utf-8", "utf8", "us-ascii", "ascii"]
    static let byteTransparentEncodings: Set<String> = ["utf-8", "utf8", "us-ascii", "ascii", "iso-8859-1", "iso8859-1", "latin1", "windows-1252"]

    /// Why the markup is not read as its bytes: an encoding declared other than UTF-8 or
    /// Latin-1, or an escape byte (how ISO-2022 shifts, whatever the declaration says).
    static func encodingProblem(of bytes: [UInt8]) -> String? {
        if bytes.contains(0x1B) { return "an escape byte (an ISO-2022 shift, which a browser reads as no character)" }
        let start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        let encoding = declaredEncoding(bytes[start...])
        if let encoding, !byteTransparentEncodings.contains(encoding) {
            return "the encoding \(encoding) declared (a browser reads its bytes otherwise than as UTF-8)"
        }
        if let encoding, !utf8Names.contains(encoding) {
            // Latin-1's bytes past ASCII are characters to a browser opening the file, but an SVG in a
            // page (`<img>`) is then not shown at all: passed through only when it holds none.
            guard !bytes[start...].contains(where: { $0 >= 0x80 }) else {
                return "bytes past ASCII in the encoding \(encoding) declared (a browser shows such an SVG in a page only in UTF-8)"
            }
            return nil
        }
        // UTF-8, declared or not: bytes that are not UTF-8 make markup a browser shows in no page.
        let valid = bytes[start...].withUnsafeBufferPointer { String(validating: $0, as: UTF8.self) != nil }
        return valid ? nil : "bytes that are not UTF-8 (a browser shows such an SVG in no page)"
    }

    /// The encoding the XML declaration names, in lower case; nil when there is none.
    private static func declaredEncoding(_ bytes: ArraySlice<UInt8>) -> String? {
        let head = Array(bytes.prefix(1024))
        guard head.starts(with: Array("<?xml".utf8)),
              let end = (0..<max(0, head.count - 1)).first(where: { head[$0] == UInt8(ascii: "?") && head[$0 + 1] == UInt8(ascii: ">") })
        else { return nil }
        let declaration = String(decoding: head[..<end], as: UTF8.self).lowercased()
        let spaces: Set<Character> = [" ", "\t", "\n", "\r"]
        guard let name = declaration.firstRange(of: "encoding") else { return nil }
        var rest = declaration[name.upperBound...].drop { spaces.contains($0) }
        guard rest.first == "=" else { return nil }
        rest = rest.dropFirst().drop { spaces.contains($0) }
        guard let quote = rest.first, quote == "\"" || quote == "'" else { return nil }
        // A label with spaces around it is still the encoding to a browser: found, as doubtful.
        return String(rest.dropFirst().prefix { $0 != quote })
    }

    static func isInert(path: String) -> Bool { activeContent(at: path) == nil }

    private static func problem(of attribute: Tag.Attribute, bytes: [UInt8], entities: SVGEntities.Declarations) -> String? {
        let local = attribute.localName
        if local.hasPrefix("on") { return "an event handler (\(attribute.name))" }
        let value = attribute.value.drop { SVGMarkup.isSpace($0) }
        if referenceAttributes.contains(local), !(value.first == 0x23 || value.starts(with: Array("data:image/".utf8))) {  // #
            return "a reference to another document (\(attribute.name))"
        }
        if attribute.name == "xmlns" || attribute.name.hasPrefix("xmlns:") {
            // A namespace written with references could name HTML's without saying it: an entity's
            // (plain text, as checked) is followed; a character reference is refused.
            var uri = String(decoding: value.reversed().drop { SVGMarkup.isSpace($0) }.reversed(), as: UTF8.self)
            if uri.hasPrefix("&"), uri.hasSuffix(";"), let range = entities.values[String(uri.dropFirst().dropLast())] {
                uri = String(decoding: bytes[range], as: UTF8.self)
            }
            if uri.contains("&") { return "a namespace written with character references" }
            if htmlNamespaces.contains(uri) { return "HTML elements (\(attribute.name))" }
        }
        if local == "attributename" {
            // An animation that sets a reference or a handler.
            let target = String(decoding: value.split(separator: 0x3A).last ?? [], as: UTF8.self)
            if referenceAttributes.contains(target) || target.hasPrefix("on") || value.contains(0x26) {
                return "an animation of \(String(decoding: value, as: UTF8.self))"
            }
        }
        return nil
    }

    /// A CSS `url()` anywhere (a `style` attribute or element) that leads out of the document.
    private static func externalURLFunction(in text: SVGMarkup) -> String? {
        var index = 0
        while let at = text.find("url(", from: index) {
            var position = text.skippingSpace(from: at + 4)
            if position < text.count, text.bytes[position] == 0x22 || text.bytes[position] == 0x27 { position += 1 }  // " '
            guard position < text.count, text.bytes[position] == 0x23 || text.has("data:image/", at: position) else {
                return "a url() to another document"
            }
            index = position
        }
        return nil
    }

    /// A start tag as an XML parser reads it: its name and attributes (lower-cased), up to its `>`,
    /// quotes respected.
    struct Tag {
        struct Attribute {
            let name: String
            let value: ArraySlice<UInt8>
            var localName: String { name.split(separator: ":").last.map(String.init) ?? name }
        }

        let name: String
        let attributes: [Attribute]
        /// Just after the tag's closing `>`.
        let end: Int

        var localName: String { name.split(separator: ":").last.map(String.init) ?? name }

        init?(_ text: SVGMarkup, at open: Int) {
            let bytes = text.bytes
            var index = open + 1
            func isNameByte(_ byte: UInt8) -> Bool {
                !SVGMarkup.isSpace(byte) && byte != 0x2F && byte != 0x3E && byte != 0x3D && byte != 0x22 && byte != 0x27  // / > = " '
            }
            guard index < bytes.count, isNameByte(bytes[index]), bytes[index] != 0x3F, bytes[index] != 0x21 else { return nil }  // ? !
            let nameStart = index
            while index < bytes.count, isNameByte(bytes[index]) { index += 1 }
            name = String(decoding: bytes[nameStart..<index], as: UTF8.self)
            var attributes: [Attribute] = []
            while true {
                index = text.skippingSpace(from: index)
                guard index < bytes.count else { return nil }
                if bytes[index] == 0x3E { break }  // >
                if bytes[index] == 0x2F { index += 1; continue }  // /
                let attributeStart = index
                while index < bytes.count, isNameByte(bytes[index]) { index += 1 }
                guard index > attributeStart else { index += 1; continue }
                let attributeName = String(decoding: bytes[attributeStart..<index], as: UTF8.self)
                index = text.skippingSpace(from: index)
                guard index < bytes.count, bytes[index] == 0x3D else {  // =
                    attributes.append(Attribute(name: attributeName, value: []))
                    continue
                }
                index = text.skippingSpace(from: index + 1)
                guard index < bytes.count else { return nil }
                let quote = bytes[index]
                if quote == 0x22 || quote == 0x27 {
                    guard let close = text.find(byte: quote, from: index + 1) else { return nil }
                    attributes.append(Attribute(name: attributeName, value: bytes[(index + 1)..<close]))
                    index = close + 1
                } else {
                    // Not XML; read as far as an HTML parser would.
                    let valueStart = index
                    while index < bytes.count, !SVGMarkup.isSpace(bytes[index]), bytes[index] != 0x3E { index += 1 }
                    attributes.append(Attribute(name: attributeName, value: bytes[valueStart..<index]))
                }
            }
            self.attributes = attributes
            end = index + 1
        }
    }
}
