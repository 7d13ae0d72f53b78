// libFuzzer targets, compiled into ImgCacheCore's module by scripts/fuzz.sh
// (`make fuzz`), one binary that runs the target IMGCACHE_FUZZ_TARGET names:
//   cli    the command-line parser (argv words split at NUL) and URL list lines
//   sniff  format sniffing, every header probe and walk, EXIF orientation
//   png, jpeg, webp, gif, avif, heic, heif, jxl, tiff, bmp, ico, svg
//          that format's header, end check, full decoder and colour
//          conversion (other inputs are skipped)
//   files  every file imgcache reads back from a cache: settings, statistics,
//          failed records, URL logs, entry metadata (text and attribute),
//          remote objects, and the HTTP headers freshness is worked out from
// Each must return for any input, without a crash, a hang or unbounded memory.
#if canImport(Glibc)
import Glibc
#endif

/// The target chosen for this process, read once.
private let fuzzTarget: String = {
    guard let value = getenv("IMGCACHE_FUZZ_TARGET") else { return "sniff" }
    return String(cString: value)
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func imgcacheFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    // Small limits keep each run fast; the limit logic itself is under test too.
    let limit = PixelLimit(pixels: 4_000_000)
    switch fuzzTarget {
    case "cli":
        // Words separated by NUL, as argv holds them: a command line, a usage error, or help.
        let words = bytes.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        if case .run(let globals, _)? = try? CommandLineParser.parse(words) { _ = globals.verbosity }
        _ = CommandLineParser.requestedColor(in: words)
        var list = LineSplitter(maximumLength: 1024)
        for line in list.push(bytes[...]) + list.finish() { _ = URLList.item(for: line) }
    case "files":
        let text = String(decoding: bytes, as: UTF8.self)
        let settings = NamespaceSettings.parse(bytes, path: "settings").settings
        _ = (settings.maxSize?.description, settings.maxAge?.description, settings.failedTTL?.description)
        _ = CacheLimits.resolve(maxSize: nil, maxAge: nil, remembered: settings)
        let counts = StatisticsLog.parse(bytes)
        _ = (counts.statistics.misses, counts.statistics.line, counts.since.map(Timestamp.iso8601))
        for record in FailedURLStore.parse(bytes, failedAt: 1_700_000_000) ?? [] { _ = Timestamp.age(record.failedAt, now: 1_700_000_000) }
        _ = URLLog.parse(bytes).values.map(URLLog.split)
        if let metadata = EntryMetadata(parsing: text) {
            _ = (metadata.serialized(), metadata.uprightSize, metadata.isFresh(at: 0), EntryAttribute.encode(metadata))
        }
        if let decoded = EntryAttribute.decode(bytes, fileName: "0123456789abcdef0123456789abcdef.jpg", key: nil) {
            _ = (decoded.metadata.serialized(), EntryAttribute.encode(decoded.metadata))
        }
        _ = try? RemoteObject(decoding: bytes)
        let fields = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) + ["", "", "", "", ""]
        _ = HTTPFreshness(cacheControl: fields[0], expires: fields[1], date: fields[2], age: fields[3], lastModified: fields[4])
            .freshUntil(received: 1_700_000_000)
    case "sniff":
        _ = ImageFormat.sniff(bytes)
        _ = try? ImageHeader.probe(bytes)
        _ = ExifOrientation.read(bytes)
        _ = PNGCodec.apngFrameCount(bytes)
        _ = WebPCodec.countChunks("ANMF", in: bytes)
    default:
        guard let format = ImageFormat.sniff(bytes), format.rawValue == fuzzTarget else { return 0 }
        _ = ImageHeader.missingEnd(of: bytes, format: format)
        if let image = try? ImageDecoder.decode(bytes, maximumPixels: limit) {
            _ = try? image.inSRGB()
            // The pixels must be all there: touch the first and the last byte.
            precondition(image.pixels.count == image.width * image.height * 4 * image.frameCount)
            _ = image.pixels.first.map { $0 &+ (image.pixels.last ?? 0) }
        }
        // At a reduced size too (a thumbnail's decode): a size the first byte picks, whole pixels still.
        if let header = try? ImageHeader.probe(bytes), header.width > 1, header.height > 1 {
            let divisor = 2 + Int(bytes.last ?? 0) % 15
            let asked = (width: max(1, header.width / divisor), height: max(1, header.height / divisor))
            if let image = try? ImageDecoder.decode(bytes, maximumPixels: limit, maximumFrames: 1, atLeast: asked) {
                precondition(image.pixels.count == image.width * image.height * 4 * image.frameCount)
                precondition(image.width >= asked.width && image.height >= asked.height, "decoded smaller than asked")
            }
        }
    }
    return 0
}
