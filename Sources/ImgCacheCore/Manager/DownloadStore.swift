#if canImport(Glibc)
import Glibc
#endif

/// Turns a finished download into a cache entry (SDWebImageManager's
/// callCompletionBlock after the store): the bytes are checked (signature,
/// header, end of the image, pixel limit; every pixel with `--verify full`),
/// transformed if asked, and stored atomically; a 304 freshens the entry's
/// metadata; a refresh told the image is gone removes it. Runs on the
/// manager's thread, the one thread of the process that writes entries.
struct DownloadStore {
    let cache: DiskCache
    let settings: FetchSettings
    /// A line of detail for `-v`; nil when nobody listens.
    let log: ((String) -> Void)?
    /// The calling thread's open lock file.
    let lockHandle: NamespaceLock.Handle

    /// Turns a finished download into a cache entry (or a freshened one after
    /// a 304). `storedBytes` receives the bytes of a new entry, for the remote stores.
    func store(_ result: Result<DownloadedBody, DownloadError>, for miss: PendingFetch,
               storedBytes: inout [UInt8]?) -> Result<FetchResult, FetchError> {
        let url = miss.url
        let file: DownloadedBody
        switch result {
        case .success(let downloaded): file = downloaded
        case .failure(.localWrite(let error)): return .failure(.cacheUnwritable(error))
        case .failure(.libraryMissing(let message)): return .failure(.libraryMissing(message))
        // Refused while it arrived: the same answers as the checks of a whole body.
        case .failure(.refused(.notAnImage(let contentType))): return .failure(.notAnImage(url: url, contentType: contentType))
        case .failure(.refused(.unsupported(let format))): return .failure(.unsupportedFormat(url: url, format))
        case .failure(.refused(.tooManyPixels(let width, let height))):
            return .failure(.tooManyPixels(url: url, width: width, height: height, limit: settings.maximumPixels))
        case .failure(let error):
            // A refresh that fails keeps the entry: for a passing reason (the server
            // down, a timeout, a 5xx) it answers, stale; for a lasting one (404, 410)
            // the failure is reported and the entry still serves later plain fetches.
            if let cached = miss.cached, error.isRetryable {
                log?("\(RemoteURL.displayed(url)): refresh failed (\(error.reason)); serving \(cached.path)")
                return .success(FetchResult(url: url, path: cached.path, cacheType: .stale, metadata: cached.metadata,
                                            refreshFailure: error))
            }
            return .failure(.download(url: url, error))
        }
        let response = file.response
        if let log {
            let shown = RemoteURL.displayed(url)
            if response.effectiveURL != url { log("\(shown): redirected to \(RemoteURL.displayed(response.effectiveURL))") }
            let retried = response.attempts > 1 ? " after \(response.attempts) attempts" : ""
            log("\(shown): HTTP \(response.statusCode), \(response.byteCount) bytes in \(Int(response.elapsed * 1000)) ms\(retried)")
        }

        let now = WallClock.now()
        if response.notModified, let cached = miss.cached {
            var metadata = cached.metadata
            metadata.storedAt = now
            if let etag = response.etag { metadata.etag = etag }
            if let lastModified = response.lastModified { metadata.lastModified = lastModified }
            // A 304 freshens the entry as the response it stands for would (its Last-Modified if it sends none).
            var freshness = response.freshness
            if freshness.lastModified == nil { freshness.lastModified = metadata.lastModified }
            metadata.freshUntil = freshness.freshUntil(received: now)
            do {
                guard let entry = try cache.replaceMetadata(of: cached, with: metadata, key: miss.key, now: now, lockHandle: lockHandle)
                    ?? cache.lookup(miss.key, now: now, lockHandle: lockHandle).entry else {
                    return .failure(.revalidationRaced(url: url))
                }
                log?("\(RemoteURL.displayed(url)): not modified, kept \(entry.path)")
                return .success(FetchResult(url: url, path: entry.path, cacheType: .refreshed, metadata: entry.metadata))
            } catch {
                return .failure(.cacheUnwritable(error))
            }
        }

        let header: ImageHeader, bytes: [UInt8]
        do throws(FetchError) {
            (header, bytes) = try verify(file, url: url)
        } catch {
            return .failure(error)
        }
        let orientation = header.orientation
        func describe(inode: UInt64, size: Int64) -> EntryMetadata {
            EntryMetadata(fileName: miss.key.fileName, inode: inode, byteCount: size, key: miss.key.storedForm, url: RemoteURL.redacted(url),
                          etag: response.etag, lastModified: response.lastModified, contentType: response.contentType,
                          format: header.format, width: header.width, height: header.height,
                          frameCount: header.frameCount, storedAt: now, freshUntil: response.freshness.freshUntil(received: now),
                          orientation: orientation)
        }
        if let transform = settings.transform,
           !transform.keepsAsServed(width: header.width, height: header.height, format: header.format, frameCount: header.frameCount ?? 1) {
            return storeTransformed(file, bytes: bytes, header: header, transform: transform, for: miss, now: now, storedBytes: &storedBytes)
        }
        if settings.options.contains(.cacheMemoryOnly) {
            log?("\(RemoteURL.displayed(url)): not stored (CacheMemoryOnly)")
            do {
                let path = try handOver(bytes)
                return .success(FetchResult(url: url, path: path, cacheType: .downloaded,
                                            metadata: describe(inode: 0, size: response.byteCount), isStored: false))
            } catch {
                return .failure(.cacheUnwritable(error))
            }
        }
        do {
            // A body that went to a file (in the shard folder) is renamed into place;
            // one in memory is written to a temporary file there first.
            let pending: PendingEntry
            if let spilled = file.spilledPath {
                pending = cache.adopt(spilled, for: miss.key)
            } else {
                pending = try cache.beginStore(for: miss.key)
                try FileSystem.writeAll(pending.descriptor, bytes, path: pending.temporaryPath)
            }
            defer { pending.discard() }
            let entry = try cache.commit(pending, superseding: superseded(by: miss), lockHandle: lockHandle, describe: describe)
            storedBytes = bytes
            return .success(FetchResult(url: url, path: entry.path, cacheType: miss.cached == nil ? .downloaded : .refreshed,
                                        metadata: entry.metadata))
        } catch {
            return .failure(.cacheUnwritable(error))
        }
    }

    /// What became of an object a remote store gave.
    enum RemoteOutcome {
        case stored(FetchResult)
        /// Not taken (why): the origin is asked instead, and the object overwritten.
        case defective(String)
        case failed(FetchError)
    }

    /// Stores an object a remote store gave for `miss`, once it passed every
    /// check a download passes (length and SHA-256, then the image's signature,
    /// header, end and the pixel limit; every pixel with `--verify full`). It
    /// holds the entry's final bytes (a transform's too): they are stored as they are.
    func storeRemote(_ data: [UInt8], for miss: PendingFetch, from store: String) -> RemoteOutcome {
        let object: RemoteObject
        do { object = try RemoteObject(decoding: data) } catch { return .defective(error.description) }
        if let limit = settings.maximumBytes, object.bytes.count > limit {
            return .defective("\(object.bytes.count) bytes, over the size limit")
        }
        let header: ImageHeader
        do throws(FetchError) {
            header = try verify(object.bytes, contentType: object.contentType, url: miss.url)
        } catch {
            if case .libraryMissing = error { return .failed(error) }
            return .defective(error.message)
        }
        let now = WallClock.now()
        do {
            let pending = try cache.beginStore(for: miss.key)
            defer { pending.discard() }
            try FileSystem.writeAll(pending.descriptor, object.bytes, path: pending.temporaryPath)
            let entry = try cache.commit(pending, superseding: superseded(by: miss), lockHandle: lockHandle) { inode, size in
                EntryMetadata(fileName: miss.key.fileName, inode: inode, byteCount: size, key: miss.key.storedForm,
                              url: RemoteURL.redacted(miss.url), etag: object.etag, lastModified: object.lastModified,
                              contentType: object.contentType, format: header.format, width: header.width, height: header.height,
                              frameCount: header.frameCount, storedAt: now,
                              orientation: header.orientation)
            }
            log?("\(RemoteURL.displayed(miss.url)): from remote \(store), \(object.bytes.count) bytes")
            return .stored(FetchResult(url: miss.url, path: entry.path, cacheType: .remote, metadata: entry.metadata))
        } catch {
            return .failed(.cacheUnwritable(error))
        }
    }

    /// Files a new entry for `miss` replaces under another name: the entry a
    /// refresh revalidated (its format may have changed), or with
    /// FromLoaderOnly, which looked nothing up, every name the key can have.
    /// After a plain miss there is none: the lookup tried every name.
    private func superseded(by miss: PendingFetch) -> [String] {
        if let cached = miss.cached { return [cached.path] }
        guard settings.options.contains(.fromLoaderOnly) else { return [] }
        let shard = cache.shardDirectory(for: miss.key) + "/"
        return miss.key.candidateFileNames.map { shard + $0 }
    }

    /// With CacheMemoryOnly, `bytes` in a new temporary file of the system's
    /// temporary folder, removed once the answer is delivered.
    private func handOver(_ bytes: [UInt8]) throws(SystemError) -> String {
        let (descriptor, path) = try TemporaryFile.create(in: DownloadStore.memoryOnlyDirectory, tag: "memory")
        defer { SystemCall.close(descriptor) }
        do { try FileSystem.writeAll(descriptor, bytes, path: path) } catch {
            try? FileSystem.remove(path)
            throw error
        }
        return path
    }

    /// Where CacheMemoryOnly bodies go: `$TMPDIR`, else /tmp; never the cache.
    static var memoryOnlyDirectory: String {
        guard let value = getenv("TMPDIR"), value.pointee != 0 else { return "/tmp" }
        return String(cString: value)
    }

    /// Decodes a download, transforms its first frame, encodes it and stores that
    /// (or with CacheMemoryOnly hands it over in a temporary file).
    private func storeTransformed(_ file: DownloadedBody, bytes: [UInt8], header: ImageHeader, transform: ImageTransform,
                                  for miss: PendingFetch, now: Double, storedBytes: inout [UInt8]?) -> Result<FetchResult, FetchError> {
        let url = miss.url
        let result: ImageTransform.Output
        do throws(FetchError) {
            let image: DecodedImage
            // Only the first frame, unless the output keeps every frame.
            do {
                image = try ImageDecoder.decode(bytes, maximumPixels: settings.maximumPixels,
                                                maximumFrames: transform.keepsFrames(of: header.format, frameCount: header.frameCount ?? 1) ? 0 : 1)
            } catch {
                switch error {
                case .libraryMissing(let message): throw .libraryMissing(message)
                default: throw .notUsable(url: url, reason: error.description)
                }
            }
            do { result = try transform.apply(to: image) } catch {
                switch error {
                case .libraryMissing(let message): throw .libraryMissing(message)
                default: throw .notUsable(url: url, reason: error.description)
                }
            }
        } catch {
            return .failure(error)
        }
        log?("\(RemoteURL.displayed(url)): \(transform.key) -> \(result.width)x\(result.height) \(result.format.displayName), \(result.bytes.count) bytes")
        let response = file.response
        func describe(inode: UInt64, size: Int64) -> EntryMetadata {
            EntryMetadata(fileName: miss.key.fileName, inode: inode, byteCount: size, key: miss.key.storedForm, url: RemoteURL.redacted(url),
                          etag: response.etag, lastModified: response.lastModified, contentType: ImageTransform.mediaType(result.format),
                          format: result.format, width: result.width, height: result.height, frameCount: result.frameCount,
                          storedAt: now, freshUntil: response.freshness.freshUntil(received: now),
                          sourceFrameCount: header.frameCount.flatMap { $0 != result.frameCount ? $0 : nil })
        }
        do throws(SystemError) {
            if settings.options.contains(.cacheMemoryOnly) {
                return .success(FetchResult(url: url, path: try handOver(result.bytes), cacheType: .downloaded,
                                            metadata: describe(inode: 0, size: Int64(result.bytes.count)), isStored: false))
            }
            let pending = try cache.beginStore(for: miss.key)
            defer { pending.discard() }
            try FileSystem.writeAll(pending.descriptor, result.bytes, path: pending.temporaryPath)
            let entry = try cache.commit(pending, superseding: superseded(by: miss), lockHandle: lockHandle, describe: describe)
            storedBytes = result.bytes
            return .success(FetchResult(url: url, path: entry.path, cacheType: miss.cached == nil ? .downloaded : .refreshed,
                                        metadata: entry.metadata))
        } catch {
            return .failure(.cacheUnwritable(error))
        }
    }

    /// Accepts the downloaded bytes only if they are a supported image whose
    /// header decodes, within the pixel limit, and with `--verify full` whose
    /// every pixel decodes. Returns the header and the bytes, for a transform.
    private func verify(_ file: DownloadedBody, url: String) throws(FetchError) -> (ImageHeader, [UInt8]) {
        let bytes: [UInt8]
        do {
            bytes = try file.bytes()
        } catch {
            throw .cacheUnwritable(error)
        }
        return (try verify(bytes, contentType: file.response.contentType, url: url), bytes)
    }

    /// The checks of `verify(_:url:)` on bytes in memory; their header.
    private func verify(_ bytes: [UInt8], contentType: String?, url: String) throws(FetchError) -> ImageHeader {
        let header: ImageHeader
        do {
            header = try ImageHeader.probe(bytes)
        } catch {
            switch error {
            case .notAnImage: throw .notAnImage(url: url, contentType: contentType)
            case .unsupported(let format): throw .unsupportedFormat(url: url, format)
            case .corrupt(let format, let reason):
                throw .corruptImage(url: url, reason: "corrupt \(format.displayName) image: \(reason)")
            case .libraryMissing(let message): throw .libraryMissing(message)
            }
        }
        if let missing = ImageHeader.missingEnd(of: bytes, format: header.format) {
            throw .corruptImage(url: url, reason: "truncated \(header.format.displayName) image: \(missing)")
        }
        guard settings.maximumPixels.allows(width: header.width, height: header.height) else {
            throw .tooManyPixels(url: url, width: header.width, height: header.height, limit: settings.maximumPixels)
        }
        if settings.verification == .full {
            // Every pixel of every frame, through the format's library.
            do {
                _ = try ImageDecoder.decode(bytes, maximumPixels: settings.maximumPixels)
            } catch {
                switch error {
                case .libraryMissing(let message): throw .libraryMissing(message)
                default: throw .notUsable(url: url, reason: error.description)
                }
            }
        }
        return header
    }
}
