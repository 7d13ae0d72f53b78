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
    public static func age(_ seconds: Double, now: Double) -> String {
        let elapsed = max(0, now - seconds)
        return elapsed < 58 ? "just now" : TimeSpan.rough(elapsed) + " ago"
    }

    private static func format(_ seconds: Double, _ pattern: String, local: Bool) -> String {
        var time = time_t(seconds.rounded(.down))
        var parts = tm()
        if local { localtime_r(&time, &parts) } else { gmtime_r(&time, &parts) }
        var buffer = [CChar](repeating: 0, count: 64)
        let count = strftime(&buffer, buffer.count, pattern, &parts)
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
