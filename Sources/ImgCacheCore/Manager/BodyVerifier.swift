#if canImport(Glibc)
import Glibc
#endif
import CImgCacheShims

/// Whether a body is an image this run takes, whatever brought it (a
/// download, a remote object, a refresh): a format imgcache stores, whose
/// header decodes, within the pixel limit, whole (its structure walked to the
/// format's end), and with `--verify full` every pixel of every frame
/// decodable, in a decode worker. A body that went to a file is read whole
/// here up to `wholeReadLimit`; a larger one is checked the same way in a
/// decode worker, so that imgcache's own memory stays small whatever it
/// downloads.
struct BodyVerifier {
    let settings: FetchSettings
    /// Where a large body is checked, and every pixel decoded with `--verify full`.
    let decoder: DecodeWorkerProcess
    /// A line of detail for `-v`; nil when nobody listens.
    let log: ((String) -> Void)?

    /// The head of a spilled body read to tell what it is, as the download's own check reads it.
    static let headLength = BodyCheck.probeLimit
    /// The most imgcache reads whole into its own memory to check a body. A larger SVG is refused
    /// (it is checked whole: its root, entities, embedded images; and drawn whole); a larger image
    /// of another format is checked in a decode worker.
    static let wholeReadLimit: Int64 = 16 << 20

    /// What the checks found: the header, and the bytes when they were read here.
    struct Verified {
        let header: ImageHeader
        let bytes: [UInt8]?
    }

    /// Checks a downloaded body.
    func verify(_ body: DownloadedBody, url: String) throws(FetchError) -> Verified {
        let size = body.response.byteCount
        guard let spilled = body.spilledPath, size > BodyVerifier.wholeReadLimit else {
            let bytes: [UInt8]
            do { bytes = try body.bytes() } catch { throw .cacheUnwritable(error) }
            return Verified(header: try verify(bytes, contentType: body.response.contentType, url: url), bytes: bytes)
        }
        let head: [UInt8]
        do { head = try FileSystem.readPrefix(spilled, count: BodyVerifier.headLength) } catch { throw .cacheUnwritable(error) }
        if SVGCodec.startsLikeMarkup(head) {
            if SVGCodec().mayStart(with: head) { throw BodyVerifier.svgTooLarge(size, url: url) }
            throw .notAnImage(url: url, contentType: body.response.contentType)
        }
        // What it is, from its signature: a format imgcache does not store is refused here.
        guard let codec = CodecRegistry.codec(recognizing: head) else { throw .notAnImage(url: url, contentType: body.response.contentType) }
        guard codec.capabilities.contains(.decode) else { throw .unsupportedFormat(url: url, codec.format) }
        let header = try checkInWorker(spilled, size: Int(size), format: codec.format, url: url)
        try checkPixels(header, url: url)
        if settings.verification == .full { try decodeEveryPixel(of: .file(spilled), header: header, size: Int(size), url: url) }
        return Verified(header: header, bytes: nil)
    }

    /// Why an SVG too large to be read whole here is not taken.
    static func svgTooLarge(_ size: Int64, url: String) -> FetchError {
        .notUsable(url: url, reason: "an SVG of \(ByteSize.humanised(size)) is larger than the "
                   + "\(ByteSize.humanisedBinary(Int(wholeReadLimit))) imgcache reads whole to check one")
    }

    /// The checks of a whole body in memory; its header.
    func verify(_ bytes: [UInt8], contentType: String?, url: String) throws(FetchError) -> ImageHeader {
        let header = try probe(bytes, contentType: contentType, url: url)
        // The limit first: finding a format's end may decode its last frame.
        try checkPixels(header, url: url)
        if let missing = ImageHeader.missingEnd(of: bytes, format: header.format) {
            throw .corruptImage(url: url, reason: "truncated \(header.format.displayName) image: \(missing)")
        }
        if settings.verification == .full {
            try decodeEveryPixel(of: .bytes(bytes), header: header, size: bytes.count, url: url)
        }
        return header
    }

    /// Where a body is: in memory, or in a file.
    enum Source {
        case bytes([UInt8])
        case file(String)
    }

    /// Every pixel of every frame decoded, through the format's codec, in the decode worker (given
    /// the body by descriptor: the file's own, or a file in memory holding the bytes).
    private func decodeEveryPixel(of source: Source, header: ImageHeader, size: Int, url: String) throws(FetchError) {
        let descriptor: Int32
        switch source {
        case .file(let path):
            do { descriptor = try SystemCall.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK).get("read", path: path) } catch {
                throw .cacheUnwritable(error)
            }
        case .bytes(let bytes):
            let made = ic_memfd("imgcache-body")
            guard made >= 0 else {
                throw .decodeStopped(url: url, failure: WorkerFailure(cause: .cannotStart("no memory for the body (\(Errno(-made)))"),
                                                                      phase: .decoding(header.format)), original: nil)
            }
            descriptor = made
            do { try FileSystem.writeAll(descriptor, bytes, path: "the body in memory") } catch {
                SystemCall.close(descriptor)
                throw .decodeStopped(url: url, failure: WorkerFailure(cause: .cannotStart(error.description), phase: .decoding(header.format)),
                                     original: nil)
            }
        }
        defer { SystemCall.close(descriptor) }
        let job = DecodeJob(work: .verify, maximumPixels: settings.maximumPixels)
        let outcome = decoder.run(job, body: descriptor, estimate: DecodeLimits.estimate(job, header: header, bodySize: size).total)
        if let log { for line in decoder.printed { log("\(RemoteURL.displayed(url)): \(line)") } }
        switch outcome {
        case .success: return
        case .failure(.decode(.libraryMissing(let message))), .failure(.encode(.libraryMissing(let message))):
            throw .libraryMissing(message)
        // Every frame counted: the limit's own failure, as from the header.
        case .failure(.decode(.tooManyPixels(let width, let height, let limit, let frames, let embedded))):
            throw .tooManyPixels(url: url, width: width, height: height, limit: limit, embedded: embedded, frames: frames)
        case .failure(.decode(let error)): throw .notUsable(url: url, reason: error.description)
        case .failure(.encode(let error)): throw .notUsable(url: url, reason: error.description)
        case .failure(.contained(let failure)): throw .decodeStopped(url: url, failure: failure, original: nil)
        case .failure(.interrupted): throw .interrupted(url: url)
        }
    }

    /// The header of a body too large to read here, read (and the body walked to its end) in a
    /// decode worker under its limits; the same answers as the checks of a body in memory.
    private func checkInWorker(_ path: String, size: Int, format: ImageFormat, url: String) throws(FetchError) -> ImageHeader {
        let descriptor: Int32
        do { descriptor = try SystemCall.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK).get("read", path: path) } catch {
            throw .cacheUnwritable(error)
        }
        defer { SystemCall.close(descriptor) }
        let job = DecodeJob(work: .check, maximumPixels: settings.maximumPixels)
        let estimate = DecodeLimits.estimate(job, header: ImageHeader(format: format, width: 1, height: 1), bodySize: size).total
        let outcome = decoder.run(job, body: descriptor, estimate: estimate)
        if let log { for line in decoder.printed { log("\(RemoteURL.displayed(url)): \(line)") } }
        switch outcome {
        case .success(let checked):
            guard let header = checked.header else {
                throw .decodeStopped(url: url, failure: WorkerFailure(cause: .brokenProtocol("it gave no header"), phase: .decoding(format)),
                                     original: nil)
            }
            return header
        case .failure(.decode(.notAnImage)): throw .notAnImage(url: url, contentType: nil)
        case .failure(.decode(.unsupported(let format))): throw .unsupportedFormat(url: url, format)
        case .failure(.decode(.libraryMissing(let message))), .failure(.encode(.libraryMissing(let message))): throw .libraryMissing(message)
        case .failure(.decode(.corrupt(let format, let reason))):
            if reason.hasPrefix(DecodeJob.truncation) {
                throw .corruptImage(url: url, reason: "truncated \(format.displayName) image: \(reason.dropFirst(DecodeJob.truncation.count))")
            }
            throw .corruptImage(url: url, reason: "corrupt \(format.displayName) image: \(reason)")
        case .failure(.decode(.tooManyPixels(let width, let height, let limit, let frames, let embedded))):
            throw .tooManyPixels(url: url, width: width, height: height, limit: limit, embedded: embedded, frames: frames)
        case .failure(.encode(let error)): throw .notUsable(url: url, reason: error.description)
        case .failure(.contained(let failure)): throw .decodeStopped(url: url, failure: failure, original: nil)
        case .failure(.interrupted): throw .interrupted(url: url)
        }
    }

    private func probe(_ bytes: [UInt8], contentType: String?, url: String) throws(FetchError) -> ImageHeader {
        do {
            return try ImageHeader.probe(bytes)
        } catch {
            switch error {
            case .notAnImage: throw .notAnImage(url: url, contentType: contentType)
            case .unsupported(let format): throw .unsupportedFormat(url: url, format)
            case .corrupt(let format, let reason):
                throw .corruptImage(url: url, reason: "corrupt \(format.displayName) image: \(reason)")
            case .libraryMissing(let message): throw .libraryMissing(message)
            }
        }
    }

    private func checkPixels(_ header: ImageHeader, url: String) throws(FetchError) {
        guard settings.maximumPixels.allows(header) else {
            throw .tooManyPixels(url: url, width: header.codedWidth, height: header.codedHeight, limit: settings.maximumPixels,
                                 embedded: header.embedded)
        }
    }
}
