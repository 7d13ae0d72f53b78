/// One `<picture>` element for an image and its variants: a `<source>` per
/// format (best first, in the order asked), the last format as the fallback
/// `<img>` with its `srcset`, `width`, `height`, `alt`, `sizes`, lazy loading
/// and async decoding. For an animation, a format that did not keep its frames
/// is left out (unless no format did).
public struct PictureMarkup: Sendable {
    /// One file a page may show: its address, size as shown, format and frames.
    public struct Candidate: Equatable, Sendable {
        public let address: String
        public let width: Int
        public let height: Int
        public let format: ImageFormat
        public let frameCount: Int

        public init(address: String, width: Int, height: Int, format: ImageFormat, frameCount: Int) {
            self.address = address
            self.width = width
            self.height = height
            self.format = format
            self.frameCount = frameCount
        }
    }

    /// `--alt`: the text that stands for the image (empty: a decorative image).
    public var alt = ""
    /// `--sizes`: how wide the image is shown, for the browser to pick a width.
    public var sizes = "100vw"
    /// `--placeholder`: a CSS `style` shown until the image loads.
    public var style: String?
    /// `loading`: `lazy`, or `eager` for the image a page shows first.
    public var loading = "lazy"
    /// `fetchpriority`: `high` for a page's main image; nil writes none.
    public var fetchPriority: String?

    public init(alt: String = "", sizes: String = "100vw", style: String? = nil, loading: String = "lazy", fetchPriority: String? = nil) {
        self.alt = alt
        self.sizes = sizes
        self.style = style
        self.loading = loading
        self.fetchPriority = fetchPriority
    }

    /// The candidates grouped by format, in the order first seen, each width once (the first of it
    /// kept), in the order given: what `--srcset` prints.
    public static func byFormat(_ candidates: [Candidate]) -> [[Candidate]] {
        var groups: [[Candidate]] = []
        for candidate in candidates {
            guard let group = groups.firstIndex(where: { $0[0].format == candidate.format }) else {
                groups.append([candidate])
                continue
            }
            if !groups[group].contains(where: { $0.width == candidate.width }) { groups[group].append(candidate) }
        }
        return groups
    }

    /// `byFormat`'s groups as a `<picture>` offers them: narrowest first, and for an animation its
    /// stills left out when a format animates.
    public static func groups(_ candidates: [Candidate], animated: Bool) -> [[Candidate]] {
        var groups = byFormat(candidates)
        if animated {
            let moving = groups.filter { $0.contains { $0.frameCount > 1 } }
            if !moving.isEmpty { groups = moving }
        }
        return groups.map { $0.sorted { $0.width < $1.width } }
    }

    /// A group's `srcset`: `address 320w, address 640w`.
    public static func srcset(_ group: [Candidate]) -> String {
        group.map { "\($0.address) \($0.width)w" }.joined(separator: ", ")
    }

    /// The `<picture>` element, on one line.
    public func picture(_ candidates: [Candidate], animated: Bool) -> String {
        let groups = PictureMarkup.groups(candidates, animated: animated)
        guard let fallback = groups.last, let largest = fallback.last else { return "" }
        var html = "<picture>"
        for group in groups.dropLast() {
            html += "<source type=\"\(group[0].format.mediaType)\" srcset=\"\(HTMLText.escaped(PictureMarkup.srcset(group)))\""
                + " sizes=\"\(HTMLText.escaped(sizes))\">"
        }
        html += "<img src=\"\(HTMLText.escaped(largest.address))\""
        if fallback.count > 1 {
            html += " srcset=\"\(HTMLText.escaped(PictureMarkup.srcset(fallback)))\" sizes=\"\(HTMLText.escaped(sizes))\""
        }
        html += " width=\"\(largest.width)\" height=\"\(largest.height)\" alt=\"\(HTMLText.escaped(alt))\" loading=\"\(loading)\" decoding=\"async\""
        if let fetchPriority { html += " fetchpriority=\"\(fetchPriority)\"" }
        if let style { html += " style=\"\(HTMLText.escaped(style))\"" }
        return html + "></picture>"
    }
}
