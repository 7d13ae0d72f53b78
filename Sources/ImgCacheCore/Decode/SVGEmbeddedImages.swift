/// The images an SVG document carries inside it as `data:` URLs, found before
/// librsvg sees the document: drawing it decodes each at its own size, so a
/// 10×10 drawing holding a 20000×20000 PNG, or two hundred 10-megapixel
/// ones, is judged by the pixels it decodes. The document is read as its
/// parser would: internal entities expanded (bounded, as `SVGEntities`
/// measured) and character references decoded, so that no spelling hides the
/// `data:` scheme. Each embedded image's header is read from its first bytes;
/// one whose header imgcache cannot read is refused rather than passed on.
enum SVGEmbeddedImages {
    /// Characters of a payload decoded to read its header: enough for any header imgcache reads.
    static let headerCharacters = 512 * 1024
    /// How deep SVGs inside SVGs are followed.
    static let maximumDepth = 3
    /// The most `data:` URLs a document may hold.
    static let maximumURLs = 10_000

    enum Problem: Error, Equatable {
        case unreadable(String)
    }

    /// The images embedded in `markup` (and in documents it embeds), nil when it embeds none.
    static func inventory(of markup: SVGMarkup, depth: Int = 0) throws(Problem) -> ImageHeader.EmbeddedImages? {
        let text = normalized(markup)
        var found = ImageHeader.EmbeddedImages(count: 0, pixels: 0)
        var urls = 0
        var index = 0
        // The scheme in any case ("DATA:" is one too), found from its colon.
        let scheme = Array("data".utf8)
        while let colon = text.find(byte: UInt8(ascii: ":"), from: index) {
            index = colon + 1
            guard colon >= 4, (0..<4).allSatisfy({ text.bytes[colon - 4 + $0] | 0x20 == scheme[$0] }) else { continue }
            urls += 1
            if urls > maximumURLs { throw .unreadable("it holds more than \(maximumURLs) data: URLs") }
            // Up to its quote, parenthesis or tag's end: white space may wrap a payload.
            var end = index
            while end < text.count, !isURLEnd(text.bytes[end]) { end += 1 }
            let url = index..<end
            index = end
            guard let comma = text.find(byte: UInt8(ascii: ","), from: url.lowerBound, before: url.upperBound) else { continue }
            let header = text.text(url.lowerBound..<comma).lowercased()
            let kind = header.split(separator: ";").first.map(String.init) ?? ""
            // Fonts, style sheets without images and the like are no pixels; style sheets and SVGs are read in turn.
            let isImage = kind.isEmpty || kind.hasPrefix("image/")
            guard isImage || kind == "text/css" else { continue }
            let payload = text.bytes[(comma + 1)..<url.upperBound]
            let isBase64 = header.hasSuffix(";base64")
            var bytes = isBase64 ? base64Prefix(payload) : percentDecodedPrefix(payload)
            let whole = { isBase64 ? base64Prefix(payload, limit: Int.max) : percentDecodedPrefix(payload, limit: Int.max) }
            // A gzipped document (SVGZ), which librsvg unpacks, is read unpacked.
            let gzipped = bytes.starts(with: [0x1F, 0x8B])
            if kind == "text/css" || kind == "image/svg+xml" || (kind.isEmpty && (gzipped || SVGCodec.startsLikeMarkup(bytes))) {
                guard depth < maximumDepth else { throw .unreadable("it nests documents more than \(maximumDepth) deep") }
                // Read whole: a document inside is judged as the outer one is.
                let inner = SVGMarkup(gzipped ? try inflated(whole()) : whole())
                if let problem = SVGEntities.problem(in: inner, limit: SVGCodec.maximumExpansion) {
                    throw .unreadable("a document embedded in it is refused: \(problem)")
                }
                if let nested = try inventory(of: inner, depth: depth + 1) { found.add(nested) }
                if kind == "image/svg+xml", let drawn = SVGCodec().drawnSize(inner) {
                    found.add(ImageHeader.EmbeddedImages(count: 1, pixels: area(drawn.width, drawn.height)))
                }
                continue
            }
            guard let codec = CodecRegistry.codec(recognizing: bytes), codec.capabilities.contains(.decode) else {
                throw .unreadable("an image embedded in it (\(kind.isEmpty ? "data:" : kind)) is not one imgcache reads")
            }
            var probed: ImageHeader?
            var failure: ImageHeader.ProbeError?
            do { probed = try codec.probe(bytes) } catch { failure = error }
            if probed == nil, payload.count > headerCharacters {
                // A header that needs more than the first bytes (a GIF's frames are counted to its end): the whole payload.
                bytes = whole()
                do { probed = try codec.probe(bytes) } catch { failure = error }
            }
            guard let probed else {
                throw .unreadable("the header of an image embedded in it does not read (\(failure.map { "\($0)" } ?? "no header"))")
            }
            found.add(ImageHeader.EmbeddedImages(count: 1, pixels: area(probed.codedWidth, probed.codedHeight)))
        }
        return found.count > 0 ? found : nil
    }

    /// A gzipped document, unpacked: at most `SVGCodec.maximumExpansion` bytes, as entities may grow one.
    private static func inflated(_ bytes: [UInt8]) throws(Problem) -> [UInt8] {
        var output: [UInt8] = []
        let tooLarge = Problem.unreadable("a gzipped document embedded in it unpacks past \(SVGCodec.maximumExpansion >> 20) MiB")
        var overflowed = false
        do throws(GzipDecoder.Failure) {
            let gzip = try GzipDecoder()
            try gzip.push(bytes[...]) { (piece: ArraySlice<UInt8>) throws(Problem) in
                output += piece
                if output.count > SVGCodec.maximumExpansion { throw tooLarge }
            }
            overflowed = gzip.pending != nil
            if !overflowed { try gzip.finish() }
        } catch {
            throw .unreadable("a gzipped document embedded in it does not unpack (\(error))")
        }
        if overflowed { throw tooLarge }
        return output
    }

    /// A payload ends at a quote, a parenthesis or a tag's bracket.
    private static func isURLEnd(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: "<"), UInt8(ascii: ">"): return true
        default: return false
        }
    }

    /// `width` × `height`, Int.max when it does not fit.
    private static func area(_ width: Int, _ height: Int) -> Int {
        let (product, overflow) = width.multipliedReportingOverflow(by: height)
        return overflow ? Int.max : product
    }

    /// The document as its parser reads its URLs: entities expanded, character references decoded,
    /// and tabs and line breaks left out (a URL parser drops them: `da&#10;ta:` is `data:`).
    static func normalized(_ markup: SVGMarkup) -> SVGMarkup {
        var output: [UInt8]
        if markup.find(byte: UInt8(ascii: "&"), from: 0) != nil {
            let entities = SVGEntities.declarations(in: markup).values
            output = []
            output.reserveCapacity(markup.count)
            var budget = SVGCodec.maximumExpansion
            expand(markup, 0..<markup.count, entities: entities, depth: 0, budget: &budget, into: &output)
        } else {
            output = markup.bytes
        }
        output.removeAll { $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        return SVGMarkup(output)
    }

    /// `range` with references replaced, into `output`; entities add at most `budget` bytes
    /// (what `SVGEntities` allowed a document that is parsed).
    private static func expand(_ markup: SVGMarkup, _ range: Range<Int>, entities: [String: Range<Int>], depth: Int,
                               budget: inout Int, into output: inout [UInt8]) {
        var index = range.lowerBound
        while let amp = markup.find(byte: UInt8(ascii: "&"), from: index, before: range.upperBound) {
            output += markup.bytes[index..<amp]
            guard let semicolon = markup.find(byte: UInt8(ascii: ";"), from: amp + 1, before: min(range.upperBound, amp + 65)) else {
                output.append(UInt8(ascii: "&"))
                index = amp + 1
                continue
            }
            let name = markup.text((amp + 1)..<semicolon)
            index = semicolon + 1
            if name.hasPrefix("#") {
                let digits = name.dropFirst()
                let value = digits.hasPrefix("x") || digits.hasPrefix("X") ? UInt32(digits.dropFirst(), radix: 16) : UInt32(digits)
                if let value, let scalar = Unicode.Scalar(value) { output += Array(String(Character(scalar)).utf8) }
            } else if let value = entities[name], depth < 16, budget > 0 {
                budget -= value.count
                expand(markup, value, entities: entities, depth: depth + 1, budget: &budget, into: &output)
            } else {
                let predefined = ["lt": "<", "gt": ">", "amp": "&", "quot": "\"", "apos": "'"]
                output += Array((predefined[name] ?? "").utf8)
            }
        }
        output += markup.bytes[index..<range.upperBound]
    }

    /// The first bytes a base64 payload holds (white space skipped, as parsers do).
    static func base64Prefix(_ payload: ArraySlice<UInt8>, limit: Int = headerCharacters) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer: UInt32 = 0, bits = 0
        for byte in payload.prefix(limit) {
            let value: UInt32
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(byte) - 65
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(byte) - 97 + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(byte) - 48 + 52
            case UInt8(ascii: "+"), UInt8(ascii: "-"): value = 62
            case UInt8(ascii: "/"), UInt8(ascii: "_"): value = 63
            case UInt8(ascii: "="): return bytes
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
    static func percentDecodedPrefix(_ payload: ArraySlice<UInt8>, limit: Int = headerCharacters) -> [UInt8] {
        URLText.percentDecoded(payload, limit: limit)
    }
}
