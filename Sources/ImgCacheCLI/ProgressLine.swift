#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCore

/// fetch --progressive: the bytes received so far, on the status line of a
/// terminal, or as -v lines elsewhere.
final class ProgressLine {
    private let console: Console
    private let onTerminal: Bool
    /// When each URL's first bytes were reported, for its rate.
    private var started: [String: Double] = [:]

    init(console: Console, onTerminal: Bool) {
        self.console = console
        self.onTerminal = onTerminal
    }

    /// `URL: 3.2 MB of 10.0 MB (32%)  1.1 MB/s  0:06 left`, as curl's meter says it.
    func show(url: String, received: Int64, expected: Int64?) {
        let now = WallClock.monotonic()
        let since = started[url] ?? now
        if started[url] == nil { started[url] = now }
        var text = "\(RemoteURL.displayed(url)): \(ByteSize.humanised(received))"
        if let expected, expected > 0 {
            text += " of \(ByteSize.humanised(expected)) (\(min(100, received * 100 / expected))%)"
        }
        let elapsed = now - since
        if elapsed >= 0.5, received > 0 {
            let rate = Double(received) / elapsed
            text += "  \(ByteSize.humanised(Int64(rate)))/s"
            if let expected, expected > received { text += "  " + ProgressBar.clock(Double(expected - received) / rate) + " left" }
        }
        if onTerminal {
            console.showStatus(String(text.suffix(max(10, console.terminalWidth - 1))))
        } else {
            console.detail(text)
        }
    }

    func clear() {
        if onTerminal { console.clearStatus() }
    }
}
