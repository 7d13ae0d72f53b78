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
}
