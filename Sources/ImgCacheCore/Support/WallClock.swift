#if canImport(Glibc)
import Glibc
#endif

/// Reads the real-time and monotonic clocks without Foundation.
public enum WallClock {
    /// Seconds since the Unix epoch, with sub-second precision.
    public static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// Seconds on a clock that never jumps, for measuring durations.
    public static func monotonic() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// `seconds` since the epoch as an ISO 8601 UTC timestamp ("2026-11-21T05:12:09Z").
    public static func iso8601(_ seconds: Double) -> String {
        var whole = time_t(seconds.rounded(.down))
        var parts = tm()
        gmtime_r(&whole, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }
}
