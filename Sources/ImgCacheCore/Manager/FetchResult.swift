/// The answer to a fetch: where the image is and what it is.
public struct FetchResult: Equatable, Sendable {
    /// The URL as requested.
    public let url: String
    /// The cached image file.
    public let path: String
    public let cacheType: CacheType
    public let metadata: EntryMetadata

    /// The result as a JSON object (`fetch --json`).
    public var json: JSONObject {
        var object = JSONObject()
        object.add("url", RemoteURL.redacted(url))
        object.add("path", path)
        object.add("cache", cacheType.rawValue)
        object.add("format", metadata.format?.rawValue)
        object.add("width", metadata.width)
        object.add("height", metadata.height)
        object.add("frames", metadata.frameCount)
        object.add("bytes", metadata.byteCount)
        object.add("content_type", metadata.contentType)
        object.add("etag", metadata.etag)
        object.add("last_modified", metadata.lastModified)
        return object
    }
}
