/// The answer to a fetch: where the image is and what it is.
public struct FetchResult: Equatable, Sendable {
    /// The URL as requested.
    public var url: String { box.fields.url }

    /// The cached image file; with CacheMemoryOnly a temporary file, removed
    /// once the answer has been delivered.
    public var path: String { box.fields.path }

    public var cacheType: CacheType { box.fields.cacheType }

    public var metadata: EntryMetadata { box.fields.metadata }

    /// False with CacheMemoryOnly: `path` is not a cache entry.
    public var isStored: Bool { box.fields.isStored }

    /// Why the refresh of a `stale` answer failed.
    public var refreshFailure: DownloadError? { box.fields.refreshFailure }

    /// Why a downloaded image was handed over without being stored: the cache's disk was full
    /// (with `-o`, the output is written all the same).
    public var notStoredBecause: SystemError? {
        get { box.fields.notStoredBecause }
        set { unique().fields.notStoredBecause = newValue }
    }

    /// With `--thumbnail`, `--format` or `--scale-down`: every variant asked for, in
    /// order (the first is also `path`); empty otherwise.
    public internal(set) var variants: [Variant] {
        get { box.fields.variants }
        set { unique().fields.variants = newValue }
    }

    /// With variants: the image as served, when it is in the cache.
    public internal(set) var originalPath: String? {
        get { box.fields.originalPath }
        set { unique().fields.originalPath = newValue }
    }

    /// With variants: the size of the image as served.
    public internal(set) var originalByteCount: Int64? {
        get { box.fields.originalByteCount }
        set { unique().fields.originalByteCount = newValue }
    }

    /// A refresh the server answered 304: no body came.
    public internal(set) var notModified: Bool {
        get { box.fields.notModified }
        set { unique().fields.notModified = newValue }
    }

    /// The width and height of the image as served, upright, when known (with variants only: as they recorded it).
    public internal(set) var originalWidth: Int? {
        get { box.fields.originalWidth }
        set { unique().fields.originalWidth = newValue }
    }

    public internal(set) var originalHeight: Int? {
        get { box.fields.originalHeight }
        set { unique().fields.originalHeight = newValue }
    }

    /// With `--placeholders`: the image's placeholder entry (its file the preview, its metadata the colour and ThumbHash).
    public internal(set) var placeholder: Variant? {
        get { box.fields.placeholder }
        set { unique().fields.placeholder = newValue }
    }

    /// The values, copy-on-write (`CopyOnWriteBox`): an answer is copied at each step from the lookup to the command.
    private var box: CopyOnWriteBox<Fields>

    private struct Fields: Equatable {
        var url: String
        var path: String
        var cacheType: CacheType
        var metadata: EntryMetadata
        var isStored: Bool
        var refreshFailure: DownloadError? = nil
        var notStoredBecause: SystemError? = nil
        var variants: [Variant] = []
        var originalPath: String? = nil
        var originalByteCount: Int64? = nil
        var notModified: Bool = false
        var originalWidth: Int? = nil
        var originalHeight: Int? = nil
        var placeholder: Variant? = nil
    }

    private mutating func unique() -> CopyOnWriteBox<Fields> { CopyOnWriteBox.unique(&box) }

    public static func == (lhs: FetchResult, rhs: FetchResult) -> Bool { CopyOnWriteBox.same(lhs.box, rhs.box) }

    /// The size of what was downloaded (or revalidated) for this answer: the
    /// image as served, not its variants; nil when nothing was.
    public var downloadedByteCount: Int64? {
        guard cacheType == .downloaded || cacheType == .refreshed else { return nil }
        return notModified ? 0 : originalByteCount ?? metadata.byteCount
    }

    /// One variant of an image: a thumbnail, a conversion or a downscaled copy.
    public struct Variant: Equatable, Sendable {
        /// Its cache entry; with CacheMemoryOnly a temporary file.
        public let path: String
        public let metadata: EntryMetadata
        public let isStored: Bool
        /// Made for the output but not stored: the cache's disk was full (`-o`).
        public var notStoredBecause: SystemError? = nil
    }

    public init(url: String, path: String, cacheType: CacheType, metadata: EntryMetadata, isStored: Bool = true,
                refreshFailure: DownloadError? = nil) {
        box = CopyOnWriteBox(Fields(url: url, path: path, cacheType: cacheType, metadata: metadata, isStored: isStored,
                         refreshFailure: refreshFailure))
    }

    /// The same image answered again for another request in this process.
    func fromMemory(url: String) -> FetchResult {
        var again = FetchResult(url: url, path: path, cacheType: .memory, metadata: metadata, isStored: isStored)
        again.variants = variants
        again.originalPath = originalPath
        again.originalByteCount = originalByteCount
        again.notModified = notModified
        again.placeholder = placeholder
        again.originalWidth = originalWidth
        again.originalHeight = originalHeight
        return again
    }

    /// The answer for `original` with its `variants` made: the first variant stands for the image (the
    /// original itself when only its placeholder was asked for); a placeholder is kept apart.
    init(variants: [Variant], of original: FetchResult) {
        let shown = variants.filter { $0.metadata.placeholder == nil }
        if let first = shown.first {
            self.init(url: original.url, path: first.path, cacheType: original.cacheType, metadata: first.metadata,
                      isStored: first.isStored, refreshFailure: original.refreshFailure)
        } else {
            self.init(url: original.url, path: original.path, cacheType: original.cacheType, metadata: original.metadata,
                      isStored: original.isStored, refreshFailure: original.refreshFailure)
        }
        self.variants = shown
        placeholder = variants.first { $0.metadata.placeholder != nil }
        // An original's metadata has no source; the stand-in for an original not found is a variant's.
        if original.metadata.source == nil {
            (originalWidth, originalHeight) = original.metadata.uprightSize
        } else {
            (originalWidth, originalHeight) = (original.metadata.sourceWidth, original.metadata.sourceHeight)
        }
        originalPath = original.isStored ? original.path : nil
        originalByteCount = original.metadata.byteCount
        notModified = original.notModified
        notStoredBecause = original.notStoredBecause ?? variants.lazy.compactMap(\.notStoredBecause).first
    }

    /// Every temporary file the answer hands over (CacheMemoryOnly, `--no-original`): removed once it is delivered.
    var handedOverPaths: [String] {
        (isStored ? [] : [path]) + (variants + (placeholder.map { [$0] } ?? [])).filter { !$0.isStored && $0.path != path }.map(\.path)
    }

    /// For a `stale` answer, what to tell the user: the refresh failed and the cached copy was served.
    /// What to say of an image delivered but not stored for want of room.
    public var notStoredWarning: String? {
        notStoredBecause.map { "\(RemoteURL.displayed(url)): not stored: the cache's disk is full (\($0.reason)); delivered to the output only" }
    }

    public var staleWarning: String? {
        guard cacheType == .stale, let refreshFailure else { return nil }
        return "\(RemoteURL.displayed(url)): refresh failed (\(refreshFailure.reason)); the cached copy was served"
    }

    /// The result as a JSON object (`fetch --json`).
    public var json: JSONObject {
        var object = JSONObject()
        object.add("url", RemoteURL.redacted(url))
        object.add("path", isStored ? path : nil)
        object.add("cache", cacheType.rawValue)
        // A refresh's answer: new bytes, or the server's 304 (the cached bytes kept).
        if cacheType == .refreshed { object.add("modified", !notModified) }
        object.add("format", metadata.format?.rawValue)
        // As the image is shown: a JPEG's EXIF orientation applied.
        object.add("width", metadata.uprightSize.width)
        object.add("height", metadata.uprightSize.height)
        object.add("orientation", metadata.orientation ?? 1)
        object.add("frames", metadata.frameCount)
        // An animation thumbnailed as a still says how many frames it had.
        object.add("source_frames", metadata.sourceFrameCount ?? metadata.frameCount)
        object.add("bytes", metadata.byteCount)
        object.add("content_type", metadata.contentType)
        object.add("etag", metadata.etag)
        object.add("last_modified", metadata.lastModified)
        object.add("refresh_error", refreshFailure?.reason)
        object.add("fresh_until", metadata.freshUntil.map(Timestamp.iso8601))
        object.add("original", originalPath)
        object.add("variants", JSONValue.array(variants.map { variant in
            var item = JSONObject()
            item.add("path", variant.isStored ? variant.path : nil)
            item.add("width", variant.metadata.uprightSize.width)
            item.add("height", variant.metadata.uprightSize.height)
            item.add("format", variant.metadata.format?.rawValue)
            item.add("orientation", variant.metadata.orientation ?? 1)
            item.add("frames", variant.metadata.frameCount)
            item.add("bytes", variant.metadata.byteCount)
            return .object(item)
        }))
        if let placeholder, let found = placeholder.metadata.placeholder {
            object.add("dominant_color", found.dominantColor.description)
            object.add("thumbhash", found.thumbHashBase64)
            object.add("lqip", lqip)
        }
        return object
    }

    /// The placeholder's preview as a `data:` URI (a WebP of at most 32 pixels a side).
    public var lqip: String? {
        guard let placeholder, let bytes = try? FileSystem.readFile(placeholder.path, limit: 1 << 20) else { return nil }
        return "data:image/webp;base64," + Base64.encoded(bytes)
    }
}

/// One URL's answer, as a run delivers it.
public struct FetchOutcome: Sendable {
    /// The URL's position in the input, from 0.
    public let index: Int
    public let url: String
    /// The answer; nil for a URL that repeats one answered before (prefetch
    /// keeps no answers, only which keys it has seen), or one left to another machine.
    public let result: Result<FetchResult, FetchError>?
    /// Left to another machine by `--shard` (not fetched, no answer).
    public var otherShard = false

    init(index: Int, url: String, result: Result<FetchResult, FetchError>?, otherShard: Bool = false) {
        self.index = index
        self.url = url
        self.result = result
        self.otherShard = otherShard
    }
}
