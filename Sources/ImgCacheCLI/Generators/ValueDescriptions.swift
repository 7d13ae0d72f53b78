/// A few words for each value an option takes, which shells show beside it as it is completed
/// (fish after a tab), in place of the option's whole help.
enum ValueDescriptions {
    private static let table: [String: [String: String]] = [
        "fit": ["inside": "fit inside the box, proportions kept", "cover": "fill the box, the centre cropped",
                "contain": "fit inside, padded to the box", "fill": "stretched to the box", "outside": "short side to the box"],
        "format": ["jpeg": "JPEG", "png": "PNG, lossless", "webp": "WebP", "gif": "GIF, 256 colours", "avif": "AVIF", "jxl": "JPEG XL"],
        "verify": ["header": "header and end checked (default)", "full": "every pixel of every frame decoded"],
        "order": ["fifo": "oldest first (default)", "lifo": "newest first"],
        "priority": ["high": "ahead of the others", "normal": "fetch's default", "low": "behind the others (prefetch's default)"],
        "color": ["auto": "on a terminal, unless NO_COLOR", "always": "always", "never": "never"],
        "input-format": ["lines": "one URL per line", "csv": "comma-separated table", "tsv": "tab-separated table",
                         "jsonl": "one JSON object per line"],
        "placeholder": ["color": "the dominant colour behind the image", "lqip": "a tiny preview behind the image"],
        "loading": ["lazy": "when near the viewport (default)", "eager": "at once"],
        "fetchpriority": ["high": "before other images", "low": "after other images", "auto": "the browser's choice"],
        "sort": ["recent": "last used first", "size": "largest first", "url": "by URL"],
    ]

    /// The words for `value` of the option `long` (its long name), nil when there are none.
    static func of(_ long: String, _ value: String) -> String? { table[long]?[value] }
}
