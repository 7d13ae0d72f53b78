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
}
