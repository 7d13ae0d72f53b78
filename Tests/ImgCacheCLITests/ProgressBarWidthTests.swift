@testable import ImgCacheCLI
import Testing

/// The progress bar at every terminal width: never wider than the terminal, every figure whole
/// (none cut mid-word), the count always there, the failures whenever they fit.
@Suite struct ProgressBarWidthTests {
    @Test func everyWidthKeepsItsWordsWhole() {
        let full = ProgressBar.line(done: 1234, total: 2000, failed: 3, bytes: 120_400_000, elapsed: 3.15, width: 400)
        let words = Set(full.split(separator: " ").map(String.init).filter { !$0.hasPrefix("[") })
        for width in 12...140 {
            for failed in [0, 3] {
                let line = ProgressBar.line(done: 1234, total: 2000, failed: failed, bytes: 120_400_000, elapsed: 3.15, width: width)
                #expect(line.count <= width - 1, "\(width): \(line)")
                let shown = line.split(separator: " ").map(String.init).filter { !$0.hasPrefix("[") }
                if width >= 20 {
                    #expect(shown.allSatisfy { words.contains($0) }, "\(width): \(line)")
                    #expect(shown.first == "1234/2000", "\(width): \(line)")
                    #expect(failed == 0 || line.hasSuffix("3 failed"), "\(width): \(line)")
                }
            }
        }
        #expect(ProgressBar.line(done: 1234, total: 2000, failed: 3, bytes: 120_400_000, elapsed: 3.15, width: 50).hasPrefix("["))
    }
}
