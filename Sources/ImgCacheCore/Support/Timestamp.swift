#if canImport(Glibc)
import Glibc
#endif

/// Formats instants (seconds since the epoch) for people and for JSON.
public enum Timestamp {
    /// `2026-11-21T09:30:05Z`: UTC, whole seconds, for JSON.
    public static func iso8601(_ seconds: Double) -> String {
        format(seconds, "%Y-%m-%dT%H:%M:%SZ", local: false)
    }

    /// `2026-11-21 10:30` in the local time zone, for people.
    public static func local(_ seconds: Double) -> String {
        format(seconds, "%Y-%m-%d %H:%M", local: true)
    }

    /// How long ago, roughly: `just now`, `5 minutes ago`, `3 days ago`.
    /// A time ahead of `now` (a clock set wrong, a file from another
    /// machine) is `in 3 days`; one long past is in years.
    public static func age(_ seconds: Double, now: Double) -> String {
        guard seconds.isFinite, now.isFinite else { return "at an unknown time" }
        if seconds - now >= 58 { return "in " + TimeSpan.rough(seconds - now) }
        let elapsed = max(0, now - seconds)
        return elapsed < 58 ? "just now" : TimeSpan.rough(elapsed) + " ago"
    }

    /// Times a calendar can show: from year 0 to about year 5000.
    static let representable = -62_167_219_200.0...95_617_584_000.0

    private static func format(_ seconds: Double, _ pattern: String, local: Bool) -> String {
        // A time no file can have (damaged metadata) is shown clamped, never a trap.
        let clamped = seconds.isFinite ? min(max(seconds, representable.lowerBound), representable.upperBound) : 0
        var time = time_t(clamped.rounded(.down))
        var parts = tm()
        if local { localtime_r(&time, &parts) } else { gmtime_r(&time, &parts) }
        var buffer = [CChar](repeating: 0, count: 64)
        let count = strftime(&buffer, buffer.count, pattern, &parts)
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
