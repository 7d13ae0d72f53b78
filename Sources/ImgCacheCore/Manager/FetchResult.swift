/// The answer to a fetch: where the image is and what it is.
public struct FetchResult: Equatable, Sendable {
    /// The URL as requested.
    public let url: String
    /// The cached image file; with CacheMemoryOnly a temporary file, removed
    /// once the answer has been delivered.
    public let path: String
    public let cacheType: CacheType
    public let metadata: EntryMetadata
    /// False with CacheMemoryOnly: `path` is not a cache entry.
    public let isStored: Bool
    /// Why the refresh of a `stale` answer failed.
    public let refreshFailure: DownloadError?

    public init(url: String, path: String, cacheType: CacheType, metadata: EntryMetadata, isStored: Bool = true,
                refreshFailure: DownloadError? = nil) {
        self.url = url
        self.path = path
        self.cacheType = cacheType
        self.metadata = metadata
        self.isStored = isStored
        self.refreshFailure = refreshFailure
    }

    /// The same image answered again for another request in this process.
    func fromMemory(url: String) -> FetchResult {
        FetchResult(url: url, path: path, cacheType: .memory, metadata: metadata, isStored: isStored)
    }

    /// For a `stale` answer, what to tell the user: the refresh failed and the cached copy was served.
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
        return object
    }
}

/// One URL's answer, as a run delivers it.
public struct FetchOutcome: Sendable {
    /// The URL's position in the input, from 0.
    public let index: Int
    public let url: String
    /// The answer; nil for a URL that repeats one answered before (prefetch
    /// keeps no answers, only which keys it has seen).
    public let result: Result<FetchResult, FetchError>?
}
