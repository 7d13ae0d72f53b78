#if canImport(Glibc)
import Glibc
#endif
import CImgCacheShims

/// Whether a body is an image this run takes, whatever brought it (a
/// download, a remote object, a refresh): a format imgcache stores, whose
/// header decodes, within the pixel limit, whole (the format's end present),
/// and with `--verify full` every pixel of every frame decodable, in a decode
/// worker. A body that went to a file is checked from its head and its tail
/// where the format allows (its header, its end), not read back whole.
struct BodyVerifier {
    let settings: FetchSettings
    /// Where every pixel is decoded with `--verify full`.
    let decoder: DecodeWorkerProcess
    /// A line of detail for `-v`; nil when nobody listens.
    let log: ((String) -> Void)?

    /// The head of a spilled body read for its header, as the download's own check reads it.
    static let headLength = BodyCheck.probeLimit
    /// The tail read for the image's end.
    static let tailLength = 64 * 1024
    /// The most imgcache reads whole into its own memory to check a body its head and tail cannot
    /// decide: an SVG (checked whole: its root, entities, embedded images) larger is refused; the
    /// end of an image of another format larger is not looked for (its header still decides).
    static let wholeReadLimit: Int64 = 16 << 20

    /// What the checks found: the header, and the bytes when they had to be
    /// read (a body in memory, or one that needed more than its head and tail).
    struct Verified {
        let header: ImageHeader
        let bytes: [UInt8]?
    }

    /// Checks a downloaded body.
    func verify(_ body: DownloadedBody, url: String) throws(FetchError) -> Verified {
        guard let spilled = body.spilledPath else {
            let bytes: [UInt8]
            do { bytes = try body.bytes() } catch { throw .cacheUnwritable(error) }
            return Verified(header: try verify(bytes, contentType: body.response.contentType, url: url), bytes: bytes)
        }
        let size = body.response.byteCount
        let head: [UInt8], tail: [UInt8]
        do throws(SystemError) {
            head = try FileSystem.readPrefix(spilled, count: BodyVerifier.headLength)
            tail = try FileSystem.readSuffix(spilled, count: BodyVerifier.tailLength, size: size)
        } catch {
            throw .cacheUnwritable(error)
        }
        if let header = try verify(head: head, tail: tail, size: size, contentType: body.response.contentType, url: url) {
            if settings.verification == .full { try decodeEveryPixel(of: .file(spilled), header: header, size: Int(size), url: url) }
            return Verified(header: header, bytes: nil)
        }
        // The format's end could not be told from the tail (a GIF's blocks, data after a JPEG's end): the whole
        // body, when it is not too large to read here.
        guard size <= BodyVerifier.wholeReadLimit else {
            let header: ImageHeader
            do { header = try probe(head, contentType: body.response.contentType, url: url) } catch {
                if SVGCodec.startsLikeMarkup(head) { throw BodyVerifier.svgTooLarge(size, url: url) }
                throw error
            }
            if header.format == .svg { throw BodyVerifier.svgTooLarge(size, url: url) }
            try checkPixels(header, url: url)
            if settings.verification == .full { try decodeEveryPixel(of: .file(spilled), header: header, size: Int(size), url: url) }
            return Verified(header: header, bytes: nil)
        }
        let bytes: [UInt8]
        do { bytes = try body.bytes() } catch { throw .cacheUnwritable(error) }
        return Verified(header: try verify(bytes, contentType: body.response.contentType, url: url), bytes: bytes)
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

    /// The checks from a body's head and tail; nil when they cannot decide (the whole is needed).
    private func verify(head: [UInt8], tail: [UInt8], size: Int64, contentType: String?,
                        url: String) throws(FetchError) -> ImageHeader? {
        guard let header = try? probe(head, contentType: contentType, url: url) else { return nil }
        let codec = CodecRegistry.codec(for: header.format)
        guard let missing = codec.missingEnd(head: head, tail: tail, size: size) else { return nil }
        if let missing { throw .corruptImage(url: url, reason: "truncated \(header.format.displayName) image: \(missing)") }
        try checkPixels(header, url: url)
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
        case .failure(.decode(let error)): throw .notUsable(url: url, reason: error.description)
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
