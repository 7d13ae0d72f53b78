#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCore

/// What `fetch` writes for pages: copies named from `--name` (`--output-dir`),
/// `srcset` values and `<picture>` markup addressing them.
extension FetchCommand {
    /// One file an answer shows: the image, or one of its variants, with the copy made of it.
    struct ShownFile {
        let path: String
        let metadata: EntryMetadata
        /// Its `--output-dir` copy, when one was written (or already held the same bytes).
        var copy: String?
    }

    /// The files `result` shows, in order: its variants, else the image itself. Of an animation,
    /// the stills are left out when a format keeps its frames: no page picks them, so they are
    /// neither copied into a site nor offered in a `srcset` (asked only in formats that cannot
    /// animate, it keeps them: a still is better than nothing).
    static func shownFiles(of result: FetchResult) -> [ShownFile] {
        guard !result.variants.isEmpty else { return [ShownFile(path: result.path, metadata: result.metadata)] }
        var variants = result.variants
        if isAnimated(result), variants.contains(where: { ($0.metadata.frameCount ?? 1) > 1 }) {
            variants.removeAll { ($0.metadata.frameCount ?? 1) <= 1 }
        }
        return variants.map { ShownFile(path: $0.path, metadata: $0.metadata) }
    }

    /// A file up to this size is read once, for its hash and its comparison with the copy; a larger one is streamed twice.
    static let readWhole: Int64 = 32 << 20

    /// The name `--name` gives a copy of `file` (an image of `url`), and the SHA-256 of its bytes
    /// (`bytes`, when they were read, else the file's).
    static func copyName(of file: ShownFile, bytes: [UInt8]?, url: String, urlStem: String?,
                         template: CopyNameTemplate) throws(SystemError) -> (name: String, hash: String) {
        let hash: String
        do throws(SHA256.Unavailable) {
            if let bytes { hash = try SHA256.hex(bytes) } else { hash = try SHA256.hex(file: file.path) }
        } catch {
            throw SystemError("read", path: file.path, errno: Errno(EIO), detail: error.reason)
        }
        let format = file.metadata.format ?? ImageFormat(namedBy: file.path) ?? CodecRegistry.fallbackFormat
        let stem = urlStem ?? remoteStem(url: url, cachedPath: file.path)
        let key = RemoteURL.redacted(URLText.withoutFragment(url))
        let shown = file.metadata.uprightSize
        let name = template.name(.init(stem: stem, format: format, width: shown.width ?? 0, height: shown.height ?? 0,
                                       hash: hash, urlHash: String(MD5.hex(key).prefix(8))))
        return (name, hash)
    }

    /// `{stem}`: the name `remoteName` gives, without the extension of a format (`photo` for `photo.jpg`, `avatar`,
    /// `notes.txt`); the cached file's name without its extension when the URL gives none that can be used.
    /// A stem that would be a dot name (`...jpg` is `..`) is the cached file's, so that no name climbs out of its folder.
    static func remoteStem(url: String, cachedPath: String) -> String {
        let named = remoteName(url: url, cachedPath: cachedPath, format: nil)
        var stem = named
        if ImageFormat(namedBy: named) != nil, let dot = named.lastIndex(of: "."), dot != named.startIndex { stem = String(named[..<dot]) }
        // No hidden file either (`.jpg` would be `.jpg.jpg`): leading dots go; nor a name that shows other than it
        // is (bidirectional controls, a right-to-left override turning `gpj.exe` around) or is blank at its ends.
        stem = String(String.UnicodeScalarView(stem.unicodeScalars.filter { !FetchCommand.bidiControls.contains($0.value) }))
        stem = String(stem.drop { $0 == "." || $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
        if stem.isEmpty || stem.contains("/") {
            let cached = String(cachedPath.split(separator: "/").last ?? "image")
            return String(cached.prefix { $0 != "." })
        }
        return stem
    }

    /// Bidirectional formatting characters (LRE, RLE, PDF, LRO, RLO, LRI, RLI, FSI, PDI, LRM, RLM, ALM).
    static let bidiControls: Set<UInt32> = [0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069, 0x200E, 0x200F, 0x061C]

    /// Why `name` (a copy's, from `--name`) cannot be written in its folder: a part that is empty or a
    /// dot name, or an image extension that is not `format`'s; nil when it can.
    static func unusableCopyName(_ name: String, format: ImageFormat) -> String? {
        if name.split(separator: "/", omittingEmptySubsequences: false).contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) {
            return "its name \(ControlCharacters.escaped(name)) would leave the folder"
        }
        if let named = ImageFormat(namedBy: name), named != format {
            return "its name \(ControlCharacters.escaped(name)) says \(named.displayName), but it is \(format.displayName): use {ext} in --name"
        }
        return nil
    }

    /// The markup `--html` prints for `result`: one `<picture>`.
    func picture(_ result: FetchResult, files: [ShownFile], row: JSONObject?, warn: inout PageWarnings) -> String {
        let page = arguments.page
        var alt = page.alt ?? ""
        if let column = page.altColumn, let value = row?.fields.last(where: { $0.0 == column })?.1 {
            warn.sawAltColumn = true
            switch value {
            case .string(let text): alt = text
            case .integer(let number): alt = String(number)
            case .number(let number): alt = String(number)
            case .numberText(let text): alt = text
            default: break
            }
        }
        warn.printedMarkup = true
        let padded = arguments.manager.settings.variants.contains { $0.fit == .contain && $0.padding == nil && !$0.makesPlaceholder }
        let markup = PictureMarkup(alt: alt, sizes: page.sizes, style: page.style(for: result, paddedTransparently: padded), loading: page.loading,
                                   fetchPriority: page.fetchPriority)
        let candidates = candidates(files)
        if page.address.siteRoot != nil, page.address.urlPrefix == nil, !warn.saidOutOfSite,
           let outside = candidates.first(where: { $0.address.hasPrefix("../") || $0.address.hasPrefix("/") }) {
            warn.saidOutOfSite = true
            console.warning("\(outside.address) is outside --site-root \(page.address.siteRoot!): a site served from there cannot "
                            + "reach it (copy the images into the site with --output-dir)")
        }
        // A page of TIFF, HEIC or JPEG XL alone shows a broken image in most browsers: said once.
        if !warn.saidUnshownFormat, let format = candidates.first?.format, !FetchCommand.browserFormats.contains(format),
           !candidates.contains(where: { FetchCommand.browserFormats.contains($0.format) }) {
            warn.saidUnshownFormat = true
            console.warning("\(RemoteURL.displayed(result.url)): its <img> is \(format.displayName), which most browsers do not show: "
                            + "give --format webp (or avif, jpeg, png) for a copy they do")
        }
        return markup.picture(candidates, animated: FetchCommand.isAnimated(result))
    }

    /// The formats every current browser shows in an `<img>`.
    static let browserFormats: Set<ImageFormat> = [.jpeg, .png, .gif, .webp, .avif, .svg, .bmp, .ico]

    /// Whether the image as served is an animation (its variants say how many frames it had).
    static func isAnimated(_ result: FetchResult) -> Bool {
        if result.variants.isEmpty { return (result.metadata.frameCount ?? 1) > 1 }
        return result.variants.contains { ($0.metadata.sourceFrameCount ?? $0.metadata.frameCount ?? 1) > 1 }
    }

    /// `--srcset`: a `srcset` per format, TAB-separated, addressing the copies when there are.
    /// One column per format the variants are in, in the order asked (a format whose files are not
    /// shown, an animation's stills, is an empty column: a script reads the columns by place), each
    /// narrowest first.
    func srcsets(_ result: FetchResult, files: [ShownFile]) -> String {
        let shown = PictureMarkup.byFormat(candidates(files))
        var formats: [ImageFormat] = []
        for variant in result.variants {
            if let format = variant.metadata.format, !formats.contains(format) { formats.append(format) }
        }
        var columns = formats.isEmpty ? shown : formats.map { format in shown.first { $0[0].format == format } ?? [] }
        // An image passed through as it is (an SVG with --keep-svg): in the last column, the
        // fallback's, the others empty, so that the columns still line up with --format.
        var asked: [ImageFormat] = []
        for format in arguments.manager.settings.variants.compactMap(\.format) where !asked.contains(format) { asked.append(format) }
        if result.variants.isEmpty, asked.count > 1, columns.count == 1 {
            columns = Array(repeating: [], count: asked.count - 1) + columns
        }
        return columns.map { PictureMarkup.srcset($0.sorted { $0.width < $1.width }) }.joined(separator: "\t")
    }

    /// The files as a page addresses them, with their size as shown, format and frames.
    private func candidates(_ files: [ShownFile]) -> [PictureMarkup.Candidate] {
        files.map { file in
            let shown = file.metadata.uprightSize
            return PictureMarkup.Candidate(address: arguments.page.address.address(of: file.copy ?? file.path), width: shown.width ?? 0,
                                           height: shown.height ?? 0, format: file.metadata.format ?? .png,
                                           frameCount: file.metadata.frameCount ?? 1)
        }
    }
}
