/// A number of bytes as people write it: `500M`, `2G`, `1.5GiB`, `4096`.
///
/// Decimal suffixes (k, M, G, T, with or without a trailing B) are powers of
/// 1000 and binary ones (Ki, Mi, Gi, Ti, with or without B) powers of 1024, as
/// in ccache. Case does not matter except that a lone `b` is not accepted.
public struct ByteSize: Equatable, Hashable, Sendable, CustomStringConvertible {
    public let bytes: Int64

    public init(bytes: Int64) {
        self.bytes = bytes
    }

    public init(parsing text: String) throws(ValueError) {
        guard let quantity = QuantityText(text) else {
            throw .invalid("expected a size such as 4096, 500M, 2G or 1.5GiB")
        }
        let value = quantity.value
        guard let multiplier = ByteSize.multipliers[quantity.unit.lowercased()] else {
            if quantity.unitIsExponent { throw quantity.exponentRefused }
            throw .invalid("unknown unit '\(quantity.unit)' (use k, M, G, T or Ki, Mi, Gi, Ti)")
        }
        let total = value * multiplier
        guard total < 9.0e18 else { throw .invalid("too large") }
        guard multiplier > 1 || value == value.rounded() else { throw .invalid("a byte count must be whole") }
        bytes = Int64(total.rounded())
    }

    private static let multipliers: [String: Double] = {
        var table: [String: Double] = ["": 1, "b": 1]
        for (index, letter) in ["k", "m", "g", "t"].enumerated() {
            let power = Double(index + 1)
            table[letter] = pow1000(power)
            table[letter + "b"] = pow1000(power)
            table[letter + "i"] = pow1024(power)
            table[letter + "ib"] = pow1024(power)
        }
        return table
    }()

    private static func pow1000(_ n: Double) -> Double { n == 0 ? 1 : 1000 * pow1000(n - 1) }
    private static func pow1024(_ n: Double) -> Double { n == 0 ? 1 : 1024 * pow1024(n - 1) }

    /// Humanised with decimal units and one decimal: `84.2 MB`, `512 B`.
    public var description: String { ByteSize.humanised(bytes) }

    /// `bytes` humanised with decimal units and one decimal: `84.2 MB`, `512 B`.
    public static func humanised(_ bytes: Int64) -> String {
        guard bytes >= 1000 || bytes <= -1000 else { return "\(bytes) B" }
        var value = Double(bytes)
        var unitIndex = -1
        let units = ["kB", "MB", "GB", "TB", "PB", "EB"]
        while abs(value) >= 999.95 && unitIndex < units.count - 1 {
            value /= 1000
            unitIndex += 1
        }
        let tenths = Int64((value * 10).rounded())
        return "\(tenths / 10).\(abs(tenths % 10)) \(units[unitIndex])"
    }
}

extension ByteSize {
    /// A limit as people give it: `1 GiB` for an exact power of 1024's multiple, else decimal
    /// (`100.0 kB`), with the bytes when they are more than a thousand (`1 GiB (1073741824 bytes)`).
    public static func spelledLimit(_ bytes: Int64) -> String {
        guard bytes >= 1000 else { return "\(bytes) bytes" }
        for (unit, size) in [("TiB", Int64(1) << 40), ("GiB", Int64(1) << 30), ("MiB", Int64(1) << 20), ("KiB", Int64(1) << 10)]
        where bytes % size == 0 {
            return "\(bytes / size) \(unit) (\(bytes) bytes)"
        }
        return "\(humanised(bytes)) (\(bytes) bytes)"
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs.
    var trimmingSpaces: Substring {
        let text = Substring(self)
        let start = text.firstIndex(where: { $0 != " " && $0 != "\t" }) ?? text.endIndex
        let end = text.lastIndex(where: { $0 != " " && $0 != "\t" }).map { text.index(after: $0) } ?? start
        return text[start..<Swift.max(start, end)]
    }
}
