import Foundation
import ImgCacheCLI
import Testing

/// The parser fuzz target's seeds and kept crashers (argv words split at NUL),
/// replayed: each parses to an invocation or a usage error.
@Suite struct ParserFuzzRegressionTests {
    static let folders = ["Tests/Fixtures/fuzz/cli", "Tests/Fixtures/fuzz/crashers/cli"].map {
        GeneratedFilesTests.repository.appendingPathComponent($0)
    }

    @Test func everyKeptCommandLineParsesOrIsAUsageError() throws {
        var count = 0
        for folder in Self.folders {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [] where !name.hasSuffix(".md") {
                let bytes = [UInt8](try Data(contentsOf: folder.appendingPathComponent(name)))
                let words = bytes.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
                _ = try? CommandLineParser.parse(words)
                count += 1
            }
        }
        #expect(count >= 3)
    }
}
