/// The images an SVG document carries inside it as `data:` URLs, found before
/// librsvg sees the document, so that a 10×10 drawing holding a 20000×20000
/// PNG is judged by the PNG's pixels. The document is read as its parser
/// would: internal entities expanded (bounded, as `SVGEntities` measured) and
/// character references decoded, so that no spelling hides the `data:`
/// scheme. Each embedded image's header is read from its first bytes; one
/// whose header imgcache cannot read is refused rather than passed on.
enum SVGEmbeddedImages {
    /// Characters of a payload decoded to read its header: enough for any header imgcache reads.
    static let headerCharacters = 512 * 1024
    /// How deep SVGs inside SVGs are followed.
    static let maximumDepth = 3

    enum Problem: Error, Equatable {
        case unreadable(String)
    }

    /// The largest image embedded in `document` (width, height), nil when it embeds none.
    static func largest(in document: String, depth: Int = 0) throws(Problem) -> (width: Int, height: Int)? {
        let text = Array(normalized(document).utf8)
        var largest: (width: Int, height: Int)?
        var count = 0
        var index = 0
        let scheme = Array("data:".utf8)
        while index + scheme.count <= text.count {
            // The scheme in any case: "DATA:" is one too.
            guard text[index] | 0x20 == scheme[0], (1..<scheme.count).allSatisfy({ text[index + $0] | (scheme[$0] == 0x3A ? 0 : 0x20) == scheme[$0] }) else {
                index += 1
                continue
            }
            index += scheme.count
            count += 1
            if count > 10_000 { throw .unreadable("it holds more than 10000 data: URLs") }
            // Up to its quote, parenthesis or tag's end: white space may wrap a payload.
            var end = index
            while end < text.count, !"\"'()<>".utf8.contains(text[end]) { end += 1 }
            let url = Substring(String(decoding: text[index..<end], as: UTF8.self))
            index = end
            guard let comma = url.firstIndex(of: ",") else { continue }
            let header = url[..<comma].lowercased()
            let kind = header.split(separator: ";").first.map(String.init) ?? ""
            // Fonts, style sheets without images and the like are no pixels; style sheets and SVGs are read in turn.
            let isImage = kind.isEmpty || kind.hasPrefix("image/")
            guard isImage || kind == "text/css" else { continue }
            let payload = url[url.index(after: comma)...]
            let bytes = header.hasSuffix(";base64") ? base64Prefix(payload) : percentDecodedPrefix(payload)
            if kind == "text/css" || kind == "image/svg+xml" || (kind.isEmpty && SVGCodec.startsLikeMarkup(bytes)) {
                guard depth < maximumDepth else { throw .unreadable("it nests documents more than \(maximumDepth) deep") }
                // Read whole: a document inside is judged as the outer one is.
                let inner = header.hasSuffix(";base64") ? base64Prefix(payload, limit: Int.max) : percentDecodedPrefix(payload, limit: Int.max)
                if let size = try SVGEmbeddedImages.largest(in: String(decoding: inner, as: UTF8.self), depth: depth + 1) { largest = larger(largest, size) }
                if kind == "image/svg+xml", let size = svgSize(inner) { largest = larger(largest, size) }
                continue
            }
            guard let codec = CodecRegistry.codec(recognizing: bytes), codec.capabilities.contains(.decode) else {
                throw .unreadable("an image embedded in it (\(kind.isEmpty ? "data:" : kind)) is not one imgcache reads")
            }
            let probed: ImageHeader
            do { probed = try codec.probe(bytes) } catch {
                throw .unreadable("the header of an image embedded in it does not read (\(error))")
            }
            largest = larger(largest, (probed.codedWidth, probed.codedHeight))
        }
        return largest
    }

    private static func larger(_ a: (width: Int, height: Int)?, _ b: (width: Int, height: Int)) -> (width: Int, height: Int) {
        guard let a else { return b }
        let (areaA, overA) = a.width.multipliedReportingOverflow(by: a.height)
        let (areaB, overB) = b.width.multipliedReportingOverflow(by: b.height)
        return overB || (!overA && areaB > areaA) ? b : a
    }

    /// An SVG's own size, when it reads.
    private static func svgSize(_ bytes: [UInt8]) -> (width: Int, height: Int)? {
        guard let header = try? SVGCodec().probe(bytes) else { return nil }
        return (header.codedWidth, header.codedHeight)
    }

    /// The document as its parser reads it: entities expanded, character references decoded.
    static func normalized(_ document: String) -> String {
        guard document.contains("&") else { return document }
        let entities = SVGEntities.values(in: document)
        var output = ""
        expand(Substring(document), entities: entities, depth: 0, into: &output)
        return output
    }

    /// `text` with references replaced, into `output` (bounded by `SVGEntities`' limit).
    private static func expand(_ text: Substring, entities: [String: String], depth: Int, into output: inout String) {
        var rest = text
        while let amp = rest.firstIndex(of: "&") {
            output += rest[..<amp]
            let after = rest[rest.index(after: amp)...]
            guard let semicolon = after.prefix(64).firstIndex(of: ";") else {
                output += "&"
                rest = after
                continue
            }
            let name = after[..<semicolon]
            rest = after[after.index(after: semicolon)...]
            if name.hasPrefix("#") {
                let digits = name.dropFirst()
                let value = digits.hasPrefix("x") || digits.hasPrefix("X") ? UInt32(digits.dropFirst(), radix: 16) : UInt32(digits)
                if let value, let scalar = Unicode.Scalar(value) { output.unicodeScalars.append(scalar) }
            } else if let value = entities[String(name)], depth < 16, output.utf8.count < SVGCodec.maximumExpansion {
                expand(Substring(value), entities: entities, depth: depth + 1, into: &output)
            } else {
                let predefined = ["lt": "<", "gt": ">", "amp": "&", "quot": "\"", "apos": "'"]
                output += predefined[String(name)] ?? ""
            }
            if output.utf8.count > SVGCodec.maximumExpansion { return }
        }
        output += rest
    }

    /// The first bytes a base64 payload holds (white space skipped, as parsers do).
    static func base64Prefix(_ payload: Substring, limit: Int = headerCharacters) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer: UInt32 = 0, bits = 0, read = 0
        for scalar in payload.unicodeScalars {
            read += 1
            if read > limit { break }
            let value: UInt32
            switch scalar {
            case "A"..."Z": value = scalar.value - 65
            case "a"..."z": value = scalar.value - 97 + 26
            case "0"..."9": value = scalar.value - 48 + 52
            case "+", "-": value = 62
            case "/", "_": value = 63
            case "=": return bytes
            default: continue
            }
            buffer = buffer << 6 | value
            bits += 6
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
            }
        }
        return bytes
    }

    /// The first bytes a percent-encoded payload holds.
    static func percentDecodedPrefix(_ payload: Substring, limit: Int = headerCharacters) -> [UInt8] {
        var bytes: [UInt8] = []
        // prefix(Int.max) would offset an index by Int.max: the whole payload is taken as it is.
        var utf8 = (limit >= payload.utf8.count ? Array(payload.utf8) : Array(payload.utf8.prefix(limit)))[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%"), utf8.count >= 2,
               let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16) {
                bytes.append(value)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return bytes
    }
}
