/// Makes the variants of an image (`--thumbnail`, `--format`, `--scale-down`,
/// several sizes and formats at once) from its cached original, as Nuke's
/// data cache does: one download serves every variant, and a new size of a
/// cached image needs no network. Variants already in the cache are reused
/// while the original is the one they were made from (a hit); an original
/// just downloaded or refreshed makes them anew. The original is decoded
/// once for all of them. Runs on the manager's thread, the one thread of the
/// process that writes entries.
struct VariantMaker {
    let cache: DiskCache
    let settings: FetchSettings
    /// A line of detail for `-v`; nil when nobody listens.
    let log: ((String) -> Void)?
    /// The calling thread's open lock file.
    let lockHandle: NamespaceLock.Handle

    private var committer: EntryCommitter { EntryCommitter(cache: cache, options: settings.options, lockHandle: lockHandle) }

    /// The answer for `original` (the image as served, found or stored) with every variant.
    func answer(for original: FetchResult) -> Result<FetchResult, FetchError> {
        // An original handed over in a temporary file (CacheMemoryOnly, --no-original) is not kept.
        defer { if !original.isStored { try? FileSystem.remove(original.path) } }
        let url = original.url
        let now = WallClock.now()
        // Variants made from this very original are still its variants; a new body makes new ones.
        let reuses = [.disk, .memory, .stale].contains(original.cacheType) && !settings.options.contains(.cacheMemoryOnly)
        var made: [FetchResult.Variant?] = []
        for transform in settings.variants {
            guard reuses, case .hit(let entry) = cache.lookup(settings.variantKey(for: url, transform), now: now, lockHandle: lockHandle) else {
                made.append(nil)
                continue
            }
            made.append(FetchResult.Variant(path: entry.path, metadata: entry.metadata, isStored: true))
        }
        if made.contains(where: { $0 == nil }) {
            do throws(FetchError) {
                try makeMissing(&made, of: original, now: now)
            } catch {
                return .failure(error)
            }
        }
        return .success(FetchResult(variants: made.map { $0! }, of: original))
    }

    /// The variants not found, made from the original's bytes: one decode for all of them.
    private func makeMissing(_ made: inout [FetchResult.Variant?], of original: FetchResult, now: Double) throws(FetchError) {
        let url = original.url
        let read: [UInt8]?
        do { read = try FileSystem.readFile(original.path, limit: Int.max) } catch { throw .cacheUnwritable(error) }
        // Removed since it was found (a clear in another process): what a miss would have said.
        guard let bytes = read else { throw .notUsable(url: url, reason: "the cached original went away before its variants were made") }
        let header: ImageHeader
        do { header = try ImageHeader.probe(bytes) } catch { throw .notUsable(url: url, reason: "\(error)") }
        let missing = settings.variants.indices.filter { made[$0] == nil }
        let frames = header.frameCount ?? 1
        var decoded: DecodedImage?
        for index in missing {
            let transform = settings.variants[index]
            let key = settings.variantKey(for: url, transform)
            if transform.keepsAsServed(width: header.width, height: header.height, format: header.format, frameCount: frames) {
                // Already what was asked: the original itself, or a copy of it when the original is not kept.
                if original.isStored, settings.keepsOriginal {
                    made[index] = FetchResult.Variant(path: original.path, metadata: original.metadata, isStored: true)
                } else {
                    made[index] = try store(bytes, format: header.format, width: header.width, height: header.height,
                                            frames: frames, sourceFrames: frames, key: key, original: original, now: now)
                }
                continue
            }
            if decoded == nil { decoded = try decode(bytes, header: header, for: missing.map { settings.variants[$0] }, url: url) }
            let output: ImageTransform.Output
            // Vectors are drawn at the size wanted; anything else is laid out as at full size.
            let shown = header.format == .svg ? nil : header.uprightSize
            do { output = try transform.apply(to: decoded!, shown: shown) } catch {
                switch error {
                case .libraryMissing(let message): throw .libraryMissing(message)
                default: throw .notUsable(url: url, reason: error.description)
                }
            }
            log?("\(RemoteURL.displayed(url)): \(transform.key) -> \(output.width)x\(output.height) \(output.format.displayName), \(output.bytes.count) bytes")
            made[index] = try store(output.bytes, format: output.format, width: output.width, height: output.height,
                                    frames: output.frameCount, sourceFrames: frames, key: key, original: original, now: now)
        }
    }

    /// The original decoded once for every transform in `transforms`: every frame if one keeps them,
    /// a vector drawn at the largest size one needs.
    private func decode(_ bytes: [UInt8], header: ImageHeader, for transforms: [ImageTransform],
                        url: String) throws(FetchError) -> DecodedImage {
        let frames = header.frameCount ?? 1
        let keepsFrames = transforms.contains { $0.keepsFrames(of: header.format, frameCount: frames) }
        var atLeast: (width: Int, height: Int)?
        if header.format == .svg {
            let sizes = transforms.map { $0.drawingSize(width: header.width, height: header.height) }
            atLeast = (sizes.map(\.width).max() ?? header.width, sizes.map(\.height).max() ?? header.height)
        } else if !keepsFrames {
            // Decoded no larger than the largest variant needs (as stored: a quarter turn swaps the sides).
            let shown = header.uprightSize
            let sizes = transforms.map { $0.layout(width: shown.width, height: shown.height).scaled }
            let needed = (width: sizes.map(\.width).max() ?? shown.width, height: sizes.map(\.height).max() ?? shown.height)
            let stored = header.orientation >= 5 ? (width: needed.height, height: needed.width) : needed
            if stored.width < header.width || stored.height < header.height { atLeast = stored }
        }
        do {
            return try ImageDecoder.decode(bytes, maximumPixels: settings.maximumPixels, maximumFrames: keepsFrames ? 0 : 1,
                                           atLeast: atLeast)
        } catch {
            switch error {
            case .libraryMissing(let message): throw .libraryMissing(message)
            default: throw .notUsable(url: url, reason: error.description)
            }
        }
    }

    /// A variant's bytes stored under `key` (with CacheMemoryOnly, handed over in a temporary file).
    private func store(_ bytes: [UInt8], format: ImageFormat, width: Int, height: Int, frames: Int, sourceFrames: Int,
                       key: CacheKey, original: FetchResult, now: Double) throws(FetchError) -> FetchResult.Variant {
        let source = original.metadata
        func describe(inode: UInt64, size: Int64) -> EntryMetadata {
            EntryMetadata(fileName: key.fileName, inode: inode, byteCount: size, key: key.storedForm, url: RemoteURL.redacted(original.url),
                          etag: source.etag, lastModified: source.lastModified, contentType: format.mediaType,
                          format: format, width: width, height: height, frameCount: frames,
                          storedAt: now, freshUntil: source.freshUntil, sourceFrameCount: sourceFrames != frames ? sourceFrames : nil)
        }
        do throws(SystemError) {
            if settings.options.contains(.cacheMemoryOnly) {
                return FetchResult.Variant(path: try committer.handOver(bytes), metadata: describe(inode: 0, size: Int64(bytes.count)),
                                           isStored: false)
            }
            // Made anew from a new original: whatever name the old one had (its format may differ) goes.
            let shard = cache.shardDirectory(for: key) + "/"
            let entry = try committer.commit(.bytes(bytes), key: key, superseding: key.candidateFileNames.map { shard + $0 },
                                             describe: describe)
            return FetchResult.Variant(path: entry.path, metadata: entry.metadata, isStored: true)
        } catch {
            throw .cacheUnwritable(error)
        }
    }
}
