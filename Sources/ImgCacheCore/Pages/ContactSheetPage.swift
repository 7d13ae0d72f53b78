/// The static page of a contact sheet (`list --html`, `prefetch --html-report`):
/// a grid of thumbnails, each with its URL, format, size, bytes and last use,
/// then the failed URLs with their reasons. Self-contained (thumbnails inline as
/// `data:` URIs, styles in the page), no script; written a piece at a time.
public enum ContactSheetPage {
    /// The box every thumbnail fits in.
    public static let thumbnailSide = 200

    /// One image of the sheet.
    public struct Item: Sendable {
        public var url: String
        public var format: ImageFormat?
        public var width: Int?
        public var height: Int?
        public var frames: Int?
        public var bytes: Int64?
        /// When it was last used, in seconds since the epoch.
        public var lastUse: Double?
        /// Its thumbnail as a `data:` URI, with its size; nil when none could be made.
        public var thumbnail: (uri: String, width: Int, height: Int)?

        public init(url: String, format: ImageFormat? = nil, width: Int? = nil, height: Int? = nil, frames: Int? = nil,
                    bytes: Int64? = nil, lastUse: Double? = nil) {
            self.url = url
            self.format = format
            self.width = width
            self.height = height
            self.frames = frames
            self.bytes = bytes
            self.lastUse = lastUse
        }
    }

    /// The page up to its grid.
    public static func start(title: String) -> String {
        """
        <!DOCTYPE html>
        <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(HTMLText.escaped(title))</title>
        <style>
        body{font:14px/1.4 system-ui,sans-serif;margin:1.5rem;color:#222;background:#fafafa}
        h1{font-size:1.3rem}h2{font-size:1.1rem;margin-top:2rem}
        .grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(220px,1fr));gap:12px}
        figure{margin:0;padding:8px;background:#fff;border:1px solid #ddd;border-radius:6px}
        figure .box{height:\(thumbnailSide)px;display:flex;align-items:center;justify-content:center;
        background:repeating-conic-gradient(#eee 0 25%,#fff 0 50%) 0 0/16px 16px}
        figure img{max-width:100%;max-height:\(thumbnailSide)px}
        figcaption{font-size:12px;margin-top:6px;word-break:break-all}
        figcaption .meta{color:#555}.none{color:#999}
        table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
        td.url{word-break:break-all}
        </style></head><body>
        <h1>\(HTMLText.escaped(title))</h1>
        <div class="grid">

        """
    }

    /// One image: its thumbnail (or a note that it has none) and what it is.
    public static func figure(_ item: Item) -> String {
        var html = "<figure><div class=\"box\">"
        if let thumbnail = item.thumbnail {
            html += "<img src=\"\(thumbnail.uri)\" width=\"\(thumbnail.width)\" height=\"\(thumbnail.height)\" alt=\"\" loading=\"lazy\">"
        } else {
            html += "<span class=\"none\">no preview</span>"
        }
        var facts: [String] = []
        if let format = item.format { facts.append(format.displayName + ((item.frames ?? 1) > 1 ? " (\(item.frames!) frames)" : "")) }
        if let width = item.width, let height = item.height { facts.append("\(width)×\(height)") }
        if let bytes = item.bytes { facts.append(ByteSize.humanised(bytes)) }
        if let lastUse = item.lastUse { facts.append("used " + Timestamp.iso8601(lastUse)) }
        let url = HTMLText.escaped(item.url)
        html += "</div><figcaption><a href=\"\(url)\">\(url)</a><br><span class=\"meta\">\(HTMLText.escaped(facts.joined(separator: " · ")))</span>"
        return html + "</figcaption></figure>\n"
    }

    /// The end of the grid, and the start of the failures' table.
    public static func failuresStart(count: Int) -> String {
        "</div>\n<h2>Failed URLs (\(count))</h2>\n<table><tr><th>URL</th><th>Why</th><th>When</th></tr>\n"
    }

    /// One failed URL.
    public static func failure(url: String, reason: String, at time: Double?) -> String {
        "<tr><td class=\"url\">\(HTMLText.escaped(url))</td><td>\(HTMLText.escaped(reason))</td><td>\(time.map(Timestamp.iso8601) ?? "")</td></tr>\n"
    }

    /// The end of the page, with what it showed.
    public static func end(summary: String) -> String {
        "</table>\n<p class=\"meta\">\(HTMLText.escaped(summary))</p>\n</body></html>\n"
    }
}
