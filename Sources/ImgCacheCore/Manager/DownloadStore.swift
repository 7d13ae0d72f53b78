#if canImport(Glibc)
import Glibc
#endif

/// Turns a finished download or a remote object into a cache entry
/// (SDWebImageManager's callCompletionBlock after the store): `BodyVerifier`
/// checks the body and `EntryCommitter` stores it atomically (its variants
/// are made from it afterwards, by `VariantMaker`); a 304 freshens the entry's metadata; a failed
/// refresh serves the entry it meant to replace. Runs on the manager's
/// thread, the one thread of the process that writes entries.
struct DownloadStore {
    let cache: DiskCache
    let settings: FetchSettings
    /// A line of detail for `-v`; nil when nobody listens.
    let log: ((String) -> Void)?
    /// The calling thread's open lock file.
    let lockHandle: NamespaceLock.Handle
    /// The calling thread's decode worker, for `--verify full`.
    let decoder: DecodeWorkerProcess

    private var verifier: BodyVerifier { BodyVerifier(settings: settings, decoder: decoder, log: log) }
    private var committer: EntryCommitter { EntryCommitter(cache: cache, options: settings.options, lockHandle: lockHandle) }

    /// Turns a finished download into a cache entry (or a freshened one after
    /// a 304). `stored` receives a new entry's body, for the remote stores:
    /// its bytes when they were read, else its file (a body spilled to a file
    /// is checked from its head and tail only).
    func store(_ result: Result<DownloadedBody, DownloadError>, for miss: PendingFetch,
               stored: inout EntryCommitter.Body?) -> Result<FetchResult, FetchError> {
        let url = miss.url
        let file: DownloadedBody
        switch result {
        case .success(let downloaded): file = downloaded
        case .failure(.localWrite(let error)): return .failure(.cacheUnwritable(error))
        case .failure(.libraryMissing(let message)): return .failure(.libraryMissing(message))
        // Refused while it arrived: the same answers as the checks of a whole body.
        case .failure(.refused(.notAnImage(let contentType))): return .failure(.notAnImage(url: url, contentType: contentType))
        case .failure(.refused(.unsupported(let format))): return .failure(.unsupportedFormat(url: url, format))
        case .failure(.refused(.tooManyPixels(let width, let height, let embedded))):
            return .failure(.tooManyPixels(url: url, width: width, height: height, limit: settings.maximumPixels, embedded: embedded))
        case .failure(let error):
            // A refresh that fails keeps the entry: for a passing reason (the server
            // down, a timeout, a 5xx) it answers, stale; for a lasting one (404, 410)
            // the failure is reported and the entry still serves later plain fetches.
            if let cached = miss.cached, error.servesStale {
                log?("\(RemoteURL.displayed(url)): refresh failed (\(error.reason)); serving \(cached.path)")
                return .success(FetchResult(url: url, path: cached.path, cacheType: .stale, metadata: cached.metadata,
                                            refreshFailure: error))
            }
            // An original not kept (--no-original, or evicted): its variants answer as it would have.
            if miss.cached == nil, error.servesStale, let variants = miss.keptVariants {
                log?("\(RemoteURL.displayed(url)): refresh failed (\(error.reason)); serving its variants")
                let stale = FetchResult(url: url, path: variants[0].path, cacheType: .stale, metadata: variants[0].metadata,
                                        isStored: false, refreshFailure: error)
                return .success(FetchResult(variants: variants, of: stale))
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
        // Variants kept without their original: unchanged, they stand.
        if response.notModified, miss.cached == nil, let kept = miss.keptVariants {
            log?("\(RemoteURL.displayed(url)): not modified, kept its variants")
            var original = FetchResult(url: url, path: kept[0].path, cacheType: .refreshed, metadata: kept[0].metadata, isStored: false)
            original.notModified = true
            return .success(FetchResult(variants: kept, of: original))
        }
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
                    ?? cache.lookup(miss.key, now: now).entry else {
                    return .failure(.revalidationRaced(url: url))
                }
                log?("\(RemoteURL.displayed(url)): not modified, kept \(entry.path)")
                var kept = FetchResult(url: url, path: entry.path, cacheType: .refreshed, metadata: entry.metadata)
                kept.notModified = true
                return .success(kept)
            } catch {
                return .failure(.cacheUnwritable(error))
            }
        }

        if let pin = miss.pin {
            // Checked before anything else: other bytes are never stored for a pinned URL.
            do {
                let found = try file.spilledPath.map { path throws(SHA256.Unavailable) in try pin.check(file: path) } ?? pin.check(try file.bytes())
                if let found { return .failure(.pinMismatch(url: url, expected: pin.sha256, found: found)) }
            } catch let error as SHA256.Unavailable {
                return .failure(.libraryMissing(error.reason))
            } catch {
                return .failure(.cacheUnwritable(SystemError("read", path: file.spilledPath, errno: .ioError)))
            }
        }
        let verified: BodyVerifier.Verified
        do throws(FetchError) {
            verified = try verifier.verify(file, url: url)
        } catch {
            return .failure(error)
        }
        let header = verified.header
        // The body's bytes, read now if the checks did not need them.
        func bytes() throws(SystemError) -> [UInt8] {
            if let read = verified.bytes { return read }
            return try file.bytes()
        }
        func describe(inode: UInt64, size: Int64) -> EntryMetadata {
            EntryMetadata(fileName: miss.key.fileName, inode: inode, byteCount: size, key: miss.key.storedForm, url: RemoteURL.redacted(url),
                          etag: response.etag, lastModified: response.lastModified, contentType: response.contentType,
                          format: header.format, width: header.width, height: header.height,
                          frameCount: header.frameCount, storedAt: now, freshUntil: response.freshness.freshUntil(received: now),
                          orientation: header.orientation)
                .optingOut(response.optsOutOfAI)
        }
        do throws(SystemError) {
            // Not kept (CacheMemoryOnly, or --no-original once its variants are made): handed over in a temporary file.
            if settings.options.contains(.cacheMemoryOnly) || (settings.makesVariants(of: header.format, inert: { SVGActiveContent.find(in: (try? bytes()) ?? []) == nil })
                                                                       && !settings.keepsOriginal) {
                log?("\(RemoteURL.displayed(url)): not stored (\(settings.keepsOriginal ? "CacheMemoryOnly" : "--no-original"))")
                // A body in a file is copied, never read into memory.
                let handed: EntryCommitter.Body
                if let read = verified.bytes { handed = .bytes(read) } else if let spilled = file.spilledPath { handed = .copy(of: spilled) } else {
                    handed = .bytes(try bytes())
                }
                let path = try committer.handOver(handed)
                // Shared with the remote stores from the file handed over (--no-original), before it goes.
                if !settings.options.contains(.cacheMemoryOnly) { stored = .file(path) }
                return .success(FetchResult(url: url, path: path, cacheType: .downloaded,
                                            metadata: describe(inode: 0, size: response.byteCount), isStored: false))
            }
            let body: EntryCommitter.Body
            if let spilled = file.spilledPath { body = .file(spilled) } else { body = .bytes(try bytes()) }
            let entry: CacheEntry
            do throws(SystemError) {
                entry = try committer.commit(body, for: miss, describe: describe)
            } catch where settings.deliversToOutput && (error.errno == .noSpace || error.errno == Errno(EDQUOT)) {
                // No room in the cache: the output still gets the image, from a file outside it.
                let handed: EntryCommitter.Body = if case .file(let spilled) = body { .copy(of: spilled) } else { body }
                var result = FetchResult(url: url, path: try committer.handOver(handed), cacheType: .downloaded,
                                         metadata: describe(inode: 0, size: response.byteCount), isStored: false)
                result.notStoredBecause = error
                return .success(result)
            }
            stored = verified.bytes.map { .bytes($0) } ?? .file(entry.path)
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
        /// Whole, but over this run's own limits (`--max-size`, `--max-pixels`): the origin is asked,
        /// and the store is not blamed.
        case overLimits(String)
        case failed(FetchError)
    }

    /// Stores an object a remote store gave for `miss`, once it passed every
    /// check a download passes (length and SHA-256, then the image's signature,
    /// header, end and the pixel limit; every pixel with `--verify full`). It
    /// holds the entry's final bytes (a transform's too): they are stored as they are.
    func storeRemote(_ data: [UInt8], for miss: PendingFetch, from store: String) -> RemoteOutcome {
        let object: RemoteObject
        do { object = try RemoteObject(decoding: data) } catch { return .defective(error.description) }
        // Stored under this key for another URL (a store's mix-up, or a planted object): not this image.
        if settings.cacheKey(for: object.url).digest != settings.cacheKey(for: RemoteURL.redacted(miss.url)).digest {
            return .defective("the object is for \(object.url.isEmpty ? "no URL" : RemoteURL.displayed(object.url))")
        }
        if let limit = settings.maximumBytes, object.bytes.count > limit {
            return .overLimits("\(object.bytes.count) bytes, over the size limit")
        }
        // Other bytes than the pinned ones (the origin's image changed since it was shared): not this
        // request's, but no fault of the store.
        if let pin = miss.pin, (try? pin.check(object.bytes)) != nil {
            return .overLimits("its bytes are not the pinned ones")
        }
        let header: ImageHeader
        do throws(FetchError) {
            header = try verifier.verify(object.bytes, contentType: object.contentType, url: miss.url)
        } catch {
            if case .libraryMissing = error { return .failed(error) }
            if case .tooManyPixels = error { return .overLimits(error.message) }
            // This run's own limits (its decode time and memory), or this machine's trouble: not the store's fault.
            if case .decodeStopped = error { return .overLimits(error.message) }
            if case .interrupted = error { return .failed(error) }
            return .defective(error.message)
        }
        let now = WallClock.now()
        do {
            let entry = try committer.commit(.bytes(object.bytes), for: miss) { inode, size in
                EntryMetadata(fileName: miss.key.fileName, inode: inode, byteCount: size, key: miss.key.storedForm,
                              url: RemoteURL.redacted(miss.url), etag: object.etag, lastModified: object.lastModified,
                              contentType: object.contentType, format: header.format, width: header.width, height: header.height,
                              frameCount: header.frameCount, storedAt: now,
                              orientation: header.orientation)
                    .optingOut(object.optedOut)
            }
            log?("\(RemoteURL.displayed(miss.url)): from remote \(store), \(object.bytes.count) bytes")
            return .stored(FetchResult(url: miss.url, path: entry.path, cacheType: .remote, metadata: entry.metadata))
        } catch {
            return .failed(.cacheUnwritable(error))
        }
    }
}
