/// What a download's first bytes must show, checked on the download thread
/// as they arrive: a body that can be no image (an HTML page served with 200),
/// or whose header announces more pixels than allowed, is abandoned at once
/// instead of being downloaded to its end. The whole body is still checked
/// when it is complete (its end, `--verify full`).
public struct BodyCheck: Equatable, Sendable {
    /// Images whose header announces more pixels are refused.
    public var maximumPixels: PixelLimit

    public init(maximumPixels: PixelLimit) {
        self.maximumPixels = maximumPixels
    }

    /// Bytes needed to tell an image's signature.
    static let signatureLength = 64
    /// The header probe is tried until the body is this long (a JPEG's size
    /// comes after its EXIF block); then the check is left to the end.
    static let probeLimit = 256 * 1024

    /// What the first `bytes` of a body say: a refusal, `nil` with `settled`
    /// once nothing more is to be learnt, or `nil` to look again with more bytes.
    func examine(_ bytes: [UInt8], contentType: String?, complete: Bool) -> (refusal: BodyRefusal?, settled: Bool) {
        guard bytes.count >= BodyCheck.signatureLength || complete else { return (nil, false) }
        guard let codec = CodecRegistry.codec(recognizing: bytes) else {
            // An XML document may say it is SVG only after its prolog: past `prologLength`, the
            // whole body decides once it has arrived.
            if !complete, SVGCodec.startsLikeMarkup(bytes),
               case .undecided = SVGCodec.scanProlog(SVGMarkup(Array(bytes.prefix(SVGCodec.prologLength)))) {
                return (nil, bytes.count >= SVGCodec.prologLength)
            }
            return (.notAnImage(contentType: contentType), true)
        }
        // A format imgcache recognises but does not store is refused from its signature, not its end.
        guard codec.capabilities.contains(.decode) else { return (.unsupported(codec.format), true) }
        guard let header = try? ImageHeader.probe(bytes) else {
            return (nil, complete || bytes.count >= BodyCheck.probeLimit)
        }
        guard maximumPixels.allows(header) else {
            return (.tooManyPixels(width: header.codedWidth, height: header.codedHeight, embedded: header.embedded), true)
        }
        return (nil, true)
    }
}

/// Why a body was abandoned while it arrived.
public enum BodyRefusal: Equatable, Sendable {
    /// Its first bytes are no image's (what the server said it was).
    case notAnImage(contentType: String?)
    /// Its signature is of a format imgcache recognises but does not store.
    case unsupported(ImageFormat)
    /// Its header announces this many pixels, more than the limit.
    case tooManyPixels(width: Int, height: Int, embedded: ImageHeader.EmbeddedImages? = nil)
    /// Sent with this Content-Encoding, it grew more than
    /// `TransferSink.maximumExpansion` times as it was decoded (a decompression bomb).
    case inflatesTooMuch(encoding: String)
}
