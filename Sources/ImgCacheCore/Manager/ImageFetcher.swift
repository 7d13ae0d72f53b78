/// Answers "give me this image": the cache first, then a download that is
/// checked and stored atomically (SDWebImageManager's loadImage flow).
public final class ImageFetcher {
    public let cache: DiskCache
    /// Called with a line of detail for `-v`.
    public var log: (String) -> Void = { _ in }

    /// Created on the first miss, so a hit never loads libcurl.
    private var downloader: Downloader?

    public init(cache: DiskCache) {
        self.cache = cache
    }

    /// Fetches one URL: a valid cache entry if there is one, else a download.
    public func fetch(_ url: String) throws(FetchError) -> FetchResult {
        let remote: RemoteURL
        do {
            remote = try RemoteURL(parsing: url)
        } catch {
            switch error {
            case .invalid(let reason): throw .invalidURL(url: url, reason: reason)
            case .unsupportedScheme(let scheme): throw .unsupportedScheme(url: url, scheme: scheme)
            }
        }
        let key = CacheKey(url)
        if let entry = cache.lookup(key, now: WallClock.now()) {
            log("hit: \(entry.path)")
            return FetchResult(url: url, path: entry.path, cacheType: .disk, metadata: entry.metadata)
        }
        let entry = try download(remote, key: key)
        return FetchResult(url: url, path: entry.path, cacheType: .none, metadata: entry.metadata)
    }

    private func download(_ remote: RemoteURL, key: CacheKey) throws(FetchError) -> CacheEntry {
        // The temporary file is made first: an unwritable cache fails before any traffic.
        let pending: PendingEntry
        do { pending = try cache.beginStore(for: key) } catch { throw .cacheUnwritable(error) }
        defer { pending.discard() }

        let url = remote.string
        let response: DownloadResponse
        do throws(DownloadError) {
            let downloader: Downloader
            if let existing = self.downloader { downloader = existing } else { downloader = try Downloader() }
            self.downloader = downloader
            log("download: \(RemoteURL.redacted(url))")
            let started = WallClock.monotonic()
            response = try downloader.download(DownloadRequest(url: remote), to: pending.descriptor, path: pending.temporaryPath)
            if response.effectiveURL != url { log("redirected to \(RemoteURL.redacted(response.effectiveURL))") }
            log("HTTP \(response.statusCode), \(response.byteCount) bytes in \(Int((WallClock.monotonic() - started) * 1000)) ms")
        } catch {
            switch error {
            case .libraryMissing(let message): throw .libraryMissing(message)
            case .localWrite(let writeError): throw .cacheUnwritable(writeError)
            default: throw .download(url: url, error)
            }
        }

        let header = try verify(pending: pending, url: url, response: response)
        do {
            return try cache.commit(pending) { inode, size in
                EntryMetadata(fileName: key.fileName, inode: inode, byteCount: size, key: key.string, url: url,
                              etag: response.etag, lastModified: response.lastModified, contentType: response.contentType,
                              format: header.format, width: header.width, height: header.height,
                              frameCount: header.frameCount, storedAt: WallClock.now())
            }
        } catch {
            throw .cacheUnwritable(error)
        }
    }

    /// Accepts the downloaded bytes only if they are a supported image whose header decodes.
    private func verify(pending: PendingEntry, url: String, response: DownloadResponse) throws(FetchError) -> ImageHeader {
        let bytes: [UInt8]
        do {
            bytes = try FileSystem.readFile(pending.temporaryPath, limit: Int(response.byteCount)) ?? []
        } catch {
            throw .cacheUnwritable(error)
        }
        do {
            return try ImageHeader.probe(bytes)
        } catch {
            switch error {
            case .notAnImage: throw .notAnImage(url: url, contentType: response.contentType)
            case .unsupported(let format): throw .unsupportedFormat(url: url, format)
            case .corrupt(let format, let reason):
                throw .corruptImage(url: url, reason: "corrupt \(format.displayName) image: \(reason)")
            case .libraryMissing(let message): throw .libraryMissing(message)
            }
        }
    }
}
