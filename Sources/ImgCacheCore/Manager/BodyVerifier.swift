/// Whether a body is an image this run takes, whatever brought it (a
/// download, a remote object, a refresh): a format imgcache stores, whose
/// header decodes, within the pixel limit, whole (the format's end present),
/// and with `--verify full` every pixel of every frame decodable. A body that
/// went to a file is checked from its head and its tail where the format
/// allows (its header, its end), not read back whole.
struct BodyVerifier {
    let settings: FetchSettings

    /// The head of a spilled body read for its header, as the download's own check reads it.
    static let headLength = BodyCheck.probeLimit
    /// The tail read for the image's end.
    static let tailLength = 64 * 1024

    /// What the checks found: the header, and the bytes when they had to be
    /// read (a body in memory, or one that needed more than its head and tail).
    struct Verified {
        let header: ImageHeader
        let bytes: [UInt8]?
    }

    /// Checks a downloaded body.
    func verify(_ body: DownloadedBody, url: String) throws(FetchError) -> Verified {
        guard let spilled = body.spilledPath, settings.verification != .full else {
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
            return Verified(header: header, bytes: nil)
        }
        // The format's end could not be told from the tail (a GIF's blocks, data after a JPEG's end): the whole body.
        let bytes: [UInt8]
        do { bytes = try body.bytes() } catch { throw .cacheUnwritable(error) }
        return Verified(header: try verify(bytes, contentType: body.response.contentType, url: url), bytes: bytes)
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
            // Every pixel of every frame, through the format's codec.
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
        guard settings.maximumPixels.allows(width: header.codedWidth, height: header.codedHeight) else {
            throw .tooManyPixels(url: url, width: header.codedWidth, height: header.codedHeight, limit: settings.maximumPixels)
        }
    }
}
