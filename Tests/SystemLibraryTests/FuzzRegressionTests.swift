import Foundation
@testable import ImgCacheCore
import Testing

/// Every input the fuzzers ever found troublesome, and the fuzz corpus seeds,
/// through the sniffer, the probe and the decoders: each must end in an answer
/// or a typed error.
@Suite struct FuzzRegressionTests {
    static let fuzz = DecoderTests.fixtures.deletingLastPathComponent().appendingPathComponent("fuzz")

    static func inputs() -> [URL] {
        let walker = FileManager.default.enumerator(at: fuzz, includingPropertiesForKeys: nil)
        return (walker?.compactMap { $0 as? URL } ?? []).filter { !$0.hasDirectoryPath && $0.pathExtension != "md" }
    }

    @Test func everyKeptInputEndsInAnAnswerOrATypedError() throws {
        let inputs = Self.inputs()
        #expect(inputs.count >= 10)
        for url in inputs {
            let bytes = [UInt8](try Data(contentsOf: url))
            _ = ImageFormat.sniff(bytes)
            _ = try? ImageHeader.probe(bytes)
            _ = ExifOrientation.read(bytes)
            _ = try? ImageDecoder.decode(bytes, maximumPixels: PixelLimit(pixels: 4_000_000))
        }
    }

    @Test func everyKeptInputReadsBackAsACacheFileWithoutATrap() throws {
        // What the `files` fuzz target does: every file imgcache reads back from a cache.
        for url in Self.inputs() {
            let bytes = [UInt8](try Data(contentsOf: url))
            let text = String(decoding: bytes, as: UTF8.self)
            let settings = NamespaceSettings.parse(bytes, path: "settings").settings
            _ = (settings.maxSize?.description, settings.maxAge?.description, settings.failedTTL?.description)
            let counts = StatisticsLog.parse(bytes)
            _ = (counts.statistics.misses, counts.statistics.line, counts.since.map(Timestamp.iso8601))
            _ = FailedURLStore.parse(bytes, failedAt: 1_700_000_000)
            _ = URLLog.parse(bytes).values.map(URLLog.split)
            if let metadata = EntryMetadata(parsing: text) { _ = (metadata.serialized(), EntryAttribute.encode(metadata)) }
            if let decoded = EntryAttribute.decode(bytes, fileName: "0123456789abcdef0123456789abcdef.jpg", key: nil) {
                _ = (decoded.metadata.serialized(), EntryAttribute.encode(decoded.metadata))
            }
            _ = try? RemoteObject(decoding: bytes)
        }
    }
}
