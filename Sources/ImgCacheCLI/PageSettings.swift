import ImgCacheCore

/// What `fetch` is told about the pages its answers go into: the markup's
/// `alt` and `sizes`, where paths are relative to, the placeholder shown while
/// an image loads, and how `--output-dir` names its copies.
public struct PageSettings: Equatable, Sendable {
    /// `--alt`: the same text for every image.
    public var alt: String?
    /// `--alt-column`: each row's text, from this column of a table list.
    public var altColumn: String?
    /// `--sizes`: how wide the image is shown (the `sizes` attribute).
    public var sizes = "100vw"
    /// `--site-root`, `--url-prefix` (and `--output-dir`, which a prefix stands for).
    public var address = PageAddress()
    /// `--placeholder`: what `--html` shows while an image loads.
    public var placeholder: Placeholder?
    /// `--name`: the copies' names.
    public var names = CopyNameTemplate.standard
    /// `--loading`: `lazy` (the default) or `eager` (the image a page shows first).
    public var loading = "lazy"
    /// `--fetchpriority`: `high` for the page's main image; nil writes none.
    public var fetchPriority: String?

    /// What an `<img>` shows until its image has loaded.
    public enum Placeholder: String, CaseIterable, Sendable {
        /// The image's dominant colour as its background.
        case color
        /// Its tiny preview, stretched over the box as its background.
        case lqip
    }

    public init() {}

    /// Whether paths are written as a page reads them (relative to a site root or under a prefix).
    var rewritesPaths: Bool { address.siteRoot != nil || address.urlPrefix != nil }

    /// The `style` attribute `--placeholder` gives an image with `placeholder` found, if any.
    /// An image with transparent pixels gets none: nothing takes the placeholder away once the image is
    /// shown, and it would show through.
    /// `paddedTransparently`: a variant is padded with clear pixels (`--fit contain` without
    /// `--background`), which would show the placeholder for good around the picture.
    func style(for result: FetchResult, paddedTransparently: Bool = false) -> String? {
        // An animation's later frames may be transparent where its first is not: none behind animations either.
        guard let placeholder, let found = result.placeholder?.metadata.placeholder, !found.hasAlpha, !FetchCommand.isAnimated(result),
              !paddedTransparently else {
            return nil
        }
        switch placeholder {
        case .color: return "background-color:\(found.dominantColor)"
        case .lqip:
            guard let uri = result.lqip else { return "background-color:\(found.dominantColor)" }
            return "background-size:cover;background-image:url(\(uri))"
        }
    }
}

/// What `--html` says once a run, rather than for every image.
struct PageWarnings {
    /// Some row had the `--alt-column` (else, at the end: the column is named wrong).
    var sawAltColumn = false
    /// An address led out of `--site-root` (said once).
    var saidOutOfSite = false
    /// Whether the run said a page shows an image in a format browsers do not (said once).
    var saidUnshownFormat = false
    /// Markup was printed for some image.
    var printedMarkup = false
}
