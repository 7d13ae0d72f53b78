/// A length of time as people write it: `45s`, `30m`, `12h`, `7d`, `2w`,
/// `1mo` (30 days), `1y` (365 days), `500ms`, or a plain number of seconds (`2.5`).
public struct TimeSpan: Equatable, Hashable, Sendable, CustomStringConvertible {
    public let seconds: Double

    public init(seconds: Double) {
        self.seconds = seconds
    }

    public init(parsing text: String) throws(ValueError) {
        guard let quantity = QuantityText(text) else {
            throw .invalid("expected a duration such as 45s, 30m, 12h, 7d or 2w")
        }
        guard let multiplier = TimeSpan.multipliers[String(quantity.unit)] else {
            if quantity.unitIsExponent { throw quantity.exponentRefused }
            throw .invalid("unknown unit '\(quantity.unit)' (use ms, s, m, h, d, w, mo or y)")
        }
        let seconds = quantity.value * multiplier
        guard seconds.isFinite, seconds <= TimeSpan.maximum else { throw TimeSpan.tooLong }
        self.seconds = seconds
    }

    /// A duration past `maximum`: an option with a narrower range names its own instead.
    public static let tooLong = ValueError.invalid("too long: at most 100y")

    /// The longest duration imgcache takes anywhere: 100 years.
    public static let maximum: Double = 100 * 31_536_000

    private static let multipliers: [String: Double] = [
        "": 1, "ms": 0.001, "s": 1, "m": 60, "min": 60, "h": 3600, "d": 86_400, "w": 604_800,
        "mo": 2_592_000, "y": 31_536_000,
    ]

    /// The largest whole unit that fits: `7d`, `90m`, `1.5s`.
    public var description: String {
        // Only what a person wrote (at most `maximum`) is spelt in units; anything else as it is.
        guard seconds.isFinite, seconds >= 0, seconds <= TimeSpan.maximum else { return "\(seconds)s" }
        for (unit, size) in [("w", 604_800.0), ("d", 86_400), ("h", 3600), ("m", 60)]
        where seconds >= size && (seconds / size).rounded() == seconds / size {
            return "\(Int(seconds / size))\(unit)"
        }
        return seconds == seconds.rounded() ? "\(Int(seconds))s" : "\(seconds)s"
    }

    /// Roughly, in the largest unit it nearly fills: `21 hours`, `5 minutes`, `1 second`.
    public var roughDescription: String {
        TimeSpan.rough(seconds)
    }

    /// `seconds` in the largest unit it nearly fills, rounded: 86,399 s is
    /// "1 day" (not "23 hours", a second after "1 day" was said), 90 minutes
    /// "2 hours", 100 s "2 minutes"; under a minute, whole seconds (at least 1).
    static func rough(_ seconds: Double) -> String {
        guard seconds.isFinite else { return seconds > 0 ? "forever" : "no time" }
        let seconds = min(seconds, 1e15)
        for (unit, size) in [("year", 31_536_000.0), ("week", 604_800), ("day", 86_400), ("hour", 3600), ("minute", 60)]
        where seconds >= size * (unit == "year" ? 1 : 0.97) {
            return Plural.count(Int((seconds / size).rounded()), unit)
        }
        return Plural.count(max(1, Int(seconds.rounded())), "second")
    }
}
