/// A length of time as people write it: `45s`, `30m`, `12h`, `7d`, `2w`,
/// `500ms`, or a plain number of seconds (`2.5`).
public struct TimeSpan: Equatable, Hashable, Sendable, CustomStringConvertible {
    public let seconds: Double

    public init(seconds: Double) {
        self.seconds = seconds
    }

    /// Why a duration did not parse.
    public enum ParseError: Error, Equatable, Sendable {
        case invalid(String)
    }

    public init(parsing text: String) throws(ParseError) {
        guard let quantity = QuantityText(text) else {
            throw .invalid("expected a duration such as 45s, 30m, 12h, 7d or 2w")
        }
        guard let multiplier = TimeSpan.multipliers[String(quantity.unit)] else {
            throw .invalid("unknown unit '\(quantity.unit)' (use ms, s, m, h, d or w)")
        }
        seconds = quantity.value * multiplier
    }

    private static let multipliers: [String: Double] = [
        "": 1, "ms": 0.001, "s": 1, "m": 60, "min": 60, "h": 3600, "d": 86_400, "w": 604_800,
    ]

    /// The largest whole unit that fits: `7d`, `90m`, `1.5s`.
    public var description: String {
        for (unit, size) in [("w", 604_800.0), ("d", 86_400), ("h", 3600), ("m", 60)]
        where seconds >= size && (seconds / size).rounded() == seconds / size {
            return "\(Int(seconds / size))\(unit)"
        }
        return seconds == seconds.rounded() ? "\(Int(seconds))s" : "\(seconds)s"
    }

    /// Roughly, in the largest unit that fits: `21 hours`, `5 minutes`, `1 second`.
    public var roughDescription: String {
        for (unit, size) in [("week", 604_800.0), ("day", 86_400), ("hour", 3600), ("minute", 60)] where seconds >= size {
            let count = Int(seconds / size)
            return "\(count) \(unit)\(count == 1 ? "" : "s")"
        }
        let count = max(1, Int(seconds))
        return "\(count) second\(count == 1 ? "" : "s")"
    }
}
