import ImgCacheCore

/// prefetch's progress on a terminal: a bar when the list's length is known,
/// the count done, the bytes received and their rate (so that a list of large
/// files does not seem stuck), the time left, redrawn at most ten times a
/// second on the console's status line.
final class ProgressBar {
    private let console: Console
    private let started = WallClock.monotonic()
    private var lastDrawn = -1.0
    private(set) var done = 0
    private var total: Int?
    private var failed = 0
    /// Bytes received so far, downloads in flight included.
    private(set) var bytes: Int64 = 0
    /// What each download in flight has reported.
    private var inFlight: [String: Int64] = [:]

    init(console: Console) {
        self.console = console
    }

    /// One more URL line answered (repeats count: they are lines of the list).
    func advance(failed: Bool) {
        done += 1
        if failed { self.failed += 1 }
        draw()
    }

    /// A download in flight reported `received` bytes.
    func received(_ received: Int64, url: String) {
        bytes += max(0, received - (inFlight[url] ?? 0))
        inFlight[url] = received
        draw()
    }

    /// A URL's answer: a download's bytes count in full, whether or not its progress was seen.
    func answered(url: String, downloadedBytes: Int64?) {
        let seen = inFlight.removeValue(forKey: url) ?? 0
        if let downloadedBytes { bytes += max(0, downloadedBytes - seen) }
    }

    /// The list has `count` URL lines.
    func setTotal(_ count: Int) {
        total = count
        draw(force: true)
    }

    func draw(force: Bool = false) {
        let now = WallClock.monotonic()
        guard force || now - lastDrawn >= 0.1 else { return }
        lastDrawn = now
        console.showStatus(ProgressBar.line(done: done, total: total, failed: failed, bytes: bytes, elapsed: now - started,
                                            width: console.terminalWidth))
    }

    func finish() {
        console.clearStatus()
    }

    /// `[#######.......]  1234/2000  61%  850/s  120.4 MB  38.2 MB/s  0:01 left  3 failed`, fitted to
    /// `width`: on a narrow terminal the figures that matter least go first (the byte rate, the
    /// bytes, the URL rate, the time left, the percentage), each whole, so that a bar of 10 still
    /// fits; narrower still, the bar goes too. The count and the failures stay.
    static func line(done: Int, total: Int?, failed: Int, bytes: Int64 = 0, elapsed: Double, width: Int) -> String {
        let rate = elapsed > 0.2 ? Double(done) / elapsed : 0
        // Each figure with its rank: the lower, the longer it stays.
        var parts: [(text: String, rank: Int)] = []
        if let total, total > 0 {
            parts.append(("\(done)/\(total)", 0))
            parts.append(("\(min(100, done * 100 / total))%", 2))
        } else {
            parts.append(("\(done) done", 0))
        }
        if rate > 0 { parts.append((rate >= 10 ? "\(Int(rate))/s" : "\(Double(Int(rate * 10)) / 10)/s", 4)) }
        if bytes > 0 {
            parts.append((ByteSize.humanised(bytes), 5))
            if elapsed > 0.2 { parts.append((ByteSize.humanised(Int64(Double(bytes) / elapsed)) + "/s", 6)) }
        }
        if let total, rate > 0, total > done { parts.append((clock(Double(total - done) / rate) + " left", 3)) }
        if failed > 0 { parts.append(("\(failed) failed", 1)) }
        // The figures that fit beside a bar of 10 or more; else, without the bar, those that fit alone.
        func fitted(_ room: Int) -> String {
            var kept = parts
            var text = kept.map(\.text).joined(separator: "  ")
            while text.count > room, let least = kept.indices.max(by: { kept[$0].rank < kept[$1].rank }), kept[least].rank > 1 {
                kept.remove(at: least)
                text = kept.map(\.text).joined(separator: "  ")
            }
            return text
        }
        if let total, total > 0 {
            // The last column is left free: a terminal that wraps there would scroll the line.
            let text = fitted(width - 1 - 4 - 10)
            if width - 1 - text.count - 4 >= 10 {
                let barWidth = min(40, width - 1 - text.count - 4)
                let filled = min(barWidth, done * barWidth / total)
                return "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: barWidth - filled) + "]  " + text
            }
        }
        return String(fitted(width - 1).prefix(max(0, width - 1)))
    }

    /// `0:07`, `12:30`, `2:05:00`.
    static func clock(_ seconds: Double) -> String {
        let whole = Int(seconds.rounded(.up))
        let (hours, minutes, rest) = (whole / 3600, whole / 60 % 60, whole % 60)
        let paddedSeconds = rest < 10 ? "0\(rest)" : "\(rest)"
        if hours > 0 { return "\(hours):" + (minutes < 10 ? "0\(minutes)" : "\(minutes)") + ":" + paddedSeconds }
        return "\(minutes):" + paddedSeconds
    }
}
