import ImgCacheCLI
import ImgCacheCore
import Testing

@Suite struct RequestedColorTests {
    @Test func readsColorEvenFromALineThatDoesNotParse() {
        #expect(CommandLineParser.requestedColor(in: ["--color", "always", "fecth"]) == .always)
        #expect(CommandLineParser.requestedColor(in: ["fecth", "--color=never"]) == .never)
        #expect(CommandLineParser.requestedColor(in: ["--color=always", "--color", "never"]) == .never)
        #expect(CommandLineParser.requestedColor(in: ["--", "--color=always"]) == .auto)
        #expect(CommandLineParser.requestedColor(in: ["--color", "sometimes"]) == .auto)
    }
}
