extension ImageFormat {
    public static let svg = ImageFormat(declaring: "svg")
}

/// SVG: recognised and named, not rasterised here.
struct SVGCodec: ImageCodec {
    let format = ImageFormat.svg
    let fileExtensions = ["svg"]
    let mediaType = "image/svg+xml"
    let capabilities: CodecCapabilities = []

    /// An XML or bare `<svg` document: optional BOM, whitespace, XML declaration,
    /// comments and doctype, then an `<svg` element.
    func recognizes(_ bytes: [UInt8]) -> Bool {
        var text = Substring(String(decoding: bytes.prefix(ImageFormat.sniffLength), as: UTF8.self))
        if text.hasPrefix("\u{FEFF}") { text = text.dropFirst() }
        while true {
            text = text.drop(while: { $0.isWhitespace })
            if text.hasPrefix("<svg") { return true }
            let closers: [(String, String)] = [("<?", "?>"), ("<!--", "-->"), ("<!", ">")]
            guard let (_, closer) = closers.first(where: { text.hasPrefix($0.0) }),
                  let end = text.firstRange(of: closer) else { return false }
            text = text[end.upperBound...]
        }
    }
}
