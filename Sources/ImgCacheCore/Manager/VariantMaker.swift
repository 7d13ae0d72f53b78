#if canImport(Glibc)
import Glibc
#endif

/// Makes the variants of an image (`--thumbnail`, `--format`, `--scale-down`,
/// several sizes and formats at once) from its cached original, as Nuke's
/// data cache does: one download serves every variant, and a new size of a
/// cached image needs no network. Variants already in the cache are reused
/// while the original is the one they were made from (a hit); an original
/// just downloaded or refreshed makes them anew. The original is decoded
/// once for all of them. Runs on the manager's thread, the one thread of the
/// process that writes entries.
package struct VariantMaker {
    let cache: DiskCache
    let settings: FetchSettings
    /// A line of detail for `-v`; nil when nobody listens.
    let log: ((String) -> Void)?
    /// The calling thread's open lock file.
    let lockHandle: NamespaceLock.Handle
    /// The calling thread's decode worker, where every pixel is decoded.
    let decoder: DecodeWorkerProcess

    private var committer: EntryCommitter { EntryCommitter(cache: cache, options: settings.options, lockHandle: lockHandle) }

    package init(cache: DiskCache, settings: FetchSettings, log: ((String) -> Void)?, lockHandle: NamespaceLock.Handle,
                 decoder: DecodeWorkerProcess) {
        self.cache = cache
        self.settings = settings
        self.log = log
        self.lockHandle = lockHandle
        self.decoder = decoder
    }

    /// The answer for `original` (the image as served, found or stored) with every variant; `held`,
    /// its file open since the job was queued.
    package func answer(for original: FetchResult, held: HeldOriginal? = nil) -> Result<FetchResult, FetchError> {
        // An original handed over in a temporary file (CacheMemoryOnly, --no-original) is not kept.
        defer { if !original.isStored { try? FileSystem.remove(original.path) } }
        let url = original.url
        let now = WallClock.now()
        // Variants made from this very file are still its variants; new bytes make new ones.
        var made: [FetchResult.Variant?] = Array(repeating: nil, count: settings.variants.count)
        if original.isStored, !settings.options.contains(.cacheMemoryOnly) {
            let variants = VariantLookup(cache: cache, settings: settings)
            let source = EntryMetadata.Source(of: original.metadata)
            for (index, transform) in settings.variants.enumerated() {
                // Under the key of a transform making the same bytes too, where the original is kept
                // (without it, a later run could not tell which key to look for).
                made[index] = variants.variant(transform, of: url, madeFrom: source,
                                               source: settings.keepsOriginal ? original.metadata : nil, now: now)
            }
        }
        // New bytes for an original not kept: the variants of other sizes and formats, made from the old
        // bytes, have no original to be checked against, so they go.
        let replaced = !original.isStored && original.cacheType == .downloaded && settings.options.contains(.refreshCached)
            && madeFromOtherBytes(than: original, now: now)
        if made.contains(where: { $0 == nil }) {
            do throws(FetchError) {
                try makeMissing(&made, of: original, held: held, now: now)
            } catch {
                return .failure(error)
            }
        }
        if replaced { removeOtherVariants(of: original.url) }
        return .success(FetchResult(variants: made.map { $0! }, of: original))
    }

    /// Whether the variants asked for that are cached were made from other bytes than `original`'s
    /// (another size, or other validators).
    private func madeFromOtherBytes(than original: FetchResult, now: Double) -> Bool {
        let variants = VariantLookup(cache: cache, settings: settings)
        let source = original.metadata
        return settings.variants.contains { transform in
            guard let old = variants.variant(transform, of: original.url, madeFrom: nil, now: now)?.metadata else { return false }
            return old.source?.byteCount != source.byteCount || old.etag != source.etag || old.lastModified != source.lastModified
        }
    }

    /// Removes the cached variants of `url` that this run does not ask for (found through the URL logs).
    private func removeOtherVariants(of url: String) {
        let asked = Set(settings.variants.map { settings.variantKey(for: url, $0).digest })
        for (key, variant) in cache.variantKeys(of: settings.cacheKey(for: url)) where !asked.contains(key.digest) {
            guard variant.transform != nil, (try? cache.removeEntry(for: key, variant: variant, dryRun: false)) != nil else { continue }
            log?("\(RemoteURL.displayed(url)): removed its \(variant.label), made from the bytes it replaced")
        }
    }

    /// Why variants were not made when the original was removed meanwhile (the manager looks it up again).
    package static let originalWentAway = "the cached original went away before its variants were made"

    /// What became of the original when its variants could not be made.
    private func fate(of original: FetchResult) -> FetchError.OriginalFate {
        original.isStored && settings.keepsOriginal ? .kept : .notKept
    }

    /// The variants not found, made from the original's bytes: one decode for all of them, in a decode
    /// worker, which reads the file itself; imgcache reads only its header (and the whole file only to
    /// copy it, for a variant that is the original as served).
    private func makeMissing(_ made: inout [FetchResult.Variant?], of original: FetchResult, held: HeldOriginal?,
                             now: Double) throws(FetchError) {
        let url = original.url
        let descriptor: Int32
        if let held {
            descriptor = held.descriptor
        } else {
            switch SystemCall.open(original.path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK) {
            case .success(let opened): descriptor = opened
            // Removed since it was found (a clear in another process): what a miss would have said.
            case .failure(.noSuchFile): throw .notUsable(url: url, reason: VariantMaker.originalWentAway)
            case .failure(let errno): throw .cacheUnwritable(SystemError("read", path: original.path, errno: errno))
            }
        }
        defer { if held == nil { SystemCall.close(descriptor) } }
        let file: FileStatus
        let head: [UInt8]
        do throws(SystemError) {
            file = try FileSystem.status(descriptor: descriptor, path: original.path)
            head = try FileSystem.readPrefix(descriptor: descriptor, path: original.path, count: BodyCheck.probeLimit)
        } catch {
            throw .cacheUnwritable(error)
        }
        var whole: [UInt8]?
        func bytes() throws(FetchError) -> [UInt8] {
            if let whole { return whole }
            if head.count == Int(file.size) { return head }
            do { whole = try FileSystem.read(descriptor, count: Int(file.size), at: 0, path: original.path) } catch { throw .cacheUnwritable(error) }
            return whole!
        }
        // The header from the head alone where it is there; else from the whole file.
        let fromHead = try? ImageHeader.probe(head)
        let probed = fromHead == nil && head.count < Int(file.size) ? try bytes() : head
        var header: ImageHeader
        do {
            if let fromHead { header = fromHead } else { header = try ImageHeader.probe(probed) }
        } catch {
            // Stored after the same check, so the file changed since: damaged in the cache.
            switch error {
            case .libraryMissing(let message): throw .libraryMissing(message)
            default: throw try undecodable(original, reason: "\(error)")
            }
        }
        // Frames counted when it was stored, where the head cannot tell them.
        if header.frameCount == nil, let frames = original.metadata.frameCount { header = header.with(frameCount: frames) }
        let missing = settings.variants.indices.filter { made[$0] == nil }
        let frames = header.frameCount ?? 1
        // Nothing larger than the pixel limit is made, whatever --upscale or --fit fill ask: checked before any decode.
        let shown = header.uprightSize
        for index in missing {
            let transform = settings.variants[index]
            let layout = transform.layout(width: shown.width, height: shown.height)
            for size in [layout.scaled, layout.canvas] where !settings.maximumPixels.allows(width: size.width, height: size.height) {
                throw .variantsNotMade(url: url, problem: .tooManyPixels(width: size.width, height: size.height,
                                                                         limit: settings.maximumPixels), original: fate(of: original))
            }
            // Beyond what the format holds (or its readers read back): refused before anything is made.
            let format = transform.outputFormat(for: header.format, animated: frames > 1)
            let side = ImageEncoder.maximumSide(of: format)
            if layout.canvas.width > side || layout.canvas.height > side {
                throw .variantsNotMade(url: url, problem: .failed("a \(layout.canvas.width)×\(layout.canvas.height) variant is larger than "
                                                                    + "\(format.displayName) allows (\(side) pixels a side)"),
                                       original: fate(of: original))
            }
        }
        var making: [(index: Int, transform: ImageTransform)] = []
        for index in missing {
            let transform = settings.variants[index]
            if transform.keepsAsServed(header) {
                // Already what was asked: the original itself, or a copy of it when the original is not kept.
                if original.isStored, settings.keepsOriginal {
                    made[index] = FetchResult.Variant(path: original.path, metadata: original.metadata, isStored: true)
                } else {
                    // Copied file to file: the original is never read into memory for it.
                    made[index] = try store(.copy(of: original.path), format: header.format, width: header.width, height: header.height,
                                            frames: frames, sourceFrames: frames, orientation: header.orientation,
                                            key: settings.variantKey(for: url, transform), original: original, now: now)
                }
                continue
            }
            making.append((index, transform))
        }
        guard !making.isEmpty else { return }
        let outputs = try make(making.map(\.transform), from: descriptor, size: Int(file.size), header: header, original: original)
        for ((index, transform), output) in zip(making, outputs) {
            log?("\(RemoteURL.displayed(url)): \(transform.key) -> \(output.width)x\(output.height) \(output.format.displayName), \(output.bytes.count) bytes")
            made[index] = try store(.bytes(output.bytes), format: output.format, width: output.width, height: output.height,
                                    frames: output.frameCount, sourceFrames: frames, orientation: nil, placeholder: output.placeholder,
                                    key: settings.variantKey(for: url, transform), original: original, now: now)
        }
    }

    /// The variants `transforms` make of the original open as `descriptor`, made by a decode worker:
    /// one decode for all of them. An original whose pixels do not decode is removed from the cache:
    /// what was stored after a header check is damaged, and a new download may mend it.
    private func make(_ transforms: [ImageTransform], from descriptor: Int32, size: Int, header: ImageHeader,
                      original: FetchResult) throws(FetchError) -> [ImageTransform.Output] {
        let url = original.url
        let job = DecodeJob(work: .variants(transforms), maximumPixels: settings.maximumPixels, strict: settings.verification == .full)
        let estimate = DecodeLimits.estimate(job, header: header, bodySize: size)
        let limit = settings.decodeLimits.memory
        // An encoder that would need more than a job may have is not started.
        for (transform, need) in zip(transforms, estimate.encoding) where need > limit {
            let layout = transform.layout(width: header.uprightSize.width, height: header.uprightSize.height)
            let format = transform.outputFormat(for: header.format, animated: (header.frameCount ?? 1) > 1)
            throw .variantsNotMade(url: url, problem: .failed("writing a \(layout.canvas.width)×\(layout.canvas.height) "
                                                                + "\(CodecRegistry.codec(for: format).displayName) would need about "
                                                                + "\(ByteSize.humanisedBinary(need)), more than a decode may take "
                                                                + "(\(ByteSize.humanisedBinary(limit)), --max-decode-memory)"),
                                   original: fate(of: original))
        }
        let outcome = decoder.run(job, body: descriptor, estimate: estimate.total)
        if let log { for line in decoder.printed { log("\(RemoteURL.displayed(url)): \(line)") } }
        switch outcome {
        case .success(let result):
            guard result.outputs.count == transforms.count else {
                throw .variantsNotMade(url: url, problem: .failed("the decode worker made \(result.outputs.count) of \(transforms.count) variants"),
                                       original: fate(of: original))
            }
            return result.outputs
        case .failure(.decode(.libraryMissing(let message))), .failure(.encode(.libraryMissing(let message))):
            throw .libraryMissing(message)
        case .failure(.decode(let error)):
            if case .corrupt = error { throw try undecodable(original, reason: error.description) }
            throw .variantsNotMade(url: url, problem: .failed(error.description), original: fate(of: original))
        case .failure(.encode(let error)):
            throw .variantsNotMade(url: url, problem: .failed(error.description), original: fate(of: original))
        case .failure(.contained(let failure)):
            throw .decodeStopped(url: url, failure: failure, original: fate(of: original))
        case .failure(.interrupted):
            throw .interrupted(url: url)
        }
    }

    /// The error for an original whose bytes do not decode; a cached one is
    /// removed first, so that the next fetch downloads it again.
    private func undecodable(_ original: FetchResult, reason: String) throws(FetchError) -> FetchError {
        guard original.isStored else {
            return .variantsNotMade(url: original.url, problem: .undecodable(reason), original: .notKept)
        }
        let key = settings.cacheKey(for: original.url)
        if case .hit(let entry) = cache.lookup(key, now: WallClock.now()),
           entry.metadata.inode == original.metadata.inode {
            do { try cache.remove(entry, key: key) } catch { throw .cacheUnwritable(error) }
            log?("\(RemoteURL.displayed(original.url)): removed \(entry.path): it does not decode")
        }
        return .variantsNotMade(url: original.url, problem: .undecodable(reason), original: .removed)
    }

    /// A variant (its bytes, or a copy of the original's file) stored under `key` (with CacheMemoryOnly, handed over in a temporary file);
    /// `orientation` is what its file asks (nil: made upright).
    private func store(_ body: EntryCommitter.Body, format: ImageFormat, width: Int, height: Int, frames: Int, sourceFrames: Int,
                       orientation: Int?, placeholder: ImagePlaceholder? = nil, key: CacheKey, original: FetchResult,
                       now: Double) throws(FetchError) -> FetchResult.Variant {
        let source = original.metadata
        // A variant stands for the very file it was made from; one made from bytes not kept, for no file
        // (inode 0), but it still says how large they were.
        let madeFrom = original.isStored ? EntryMetadata.Source(of: source) : EntryMetadata.Source(inode: 0, byteCount: source.byteCount)
        func describe(inode: UInt64, size: Int64) -> EntryMetadata {
            var metadata = EntryMetadata(fileName: key.fileName, inode: inode, byteCount: size, key: key.storedForm, url: RemoteURL.redacted(original.url),
                          etag: source.etag, lastModified: source.lastModified, contentType: source.contentType,
                          format: format, width: width, height: height, frameCount: frames,
                          storedAt: now, freshUntil: source.freshUntil, orientation: orientation,
                          sourceFrameCount: sourceFrames != frames ? sourceFrames : nil, source: madeFrom)
                .optingOut(source.optedOut)
            metadata.placeholder = placeholder
            // The original's size, upright, stays known without the original (not kept, or in another cache).
            let upright = source.source == nil ? source.uprightSize : (source.sourceWidth, source.sourceHeight)
            (metadata.sourceWidth, metadata.sourceHeight) = (upright.0, upright.1)
            return metadata
        }
        do throws(SystemError) {
            if settings.options.contains(.cacheMemoryOnly) {
                let path = try committer.handOver(body)
                let size = (try? FileSystem.status(path))??.size ?? 0
                return FetchResult.Variant(path: path, metadata: describe(inode: 0, size: size), isStored: false)
            }
            // Made anew from a new original: whatever name the old one had (its format may differ) goes.
            let shard = cache.shardDirectory(for: key) + "/"
            do throws(SystemError) {
                let entry = try committer.commit(body, key: key, superseding: key.candidateFileNames.map { shard + $0 },
                                                 describe: describe)
                return FetchResult.Variant(path: entry.path, metadata: entry.metadata, isStored: true)
            } catch where settings.deliversToOutput && (error.errno == .noSpace || error.errno == Errno(EDQUOT)) {
                // No room in the cache: the output still gets the variant, from a file outside it.
                let handed: EntryCommitter.Body = if case .file(let made) = body { .copy(of: made) } else { body }
                let path = try committer.handOver(handed)
                let size = (try? FileSystem.status(path))??.size ?? 0
                var variant = FetchResult.Variant(path: path, metadata: describe(inode: 0, size: size), isStored: false)
                variant.notStoredBecause = error
                return variant
            }
        } catch {
            throw .cacheUnwritable(error)
        }
    }
}
