#if canImport(Glibc)
import Glibc
#endif
/// A number followed by an optional unit, as in `1.5GiB` or `30m`: what
/// `ByteSize`, `TimeSpan` and `--rate` have in common. Only plain decimals are
/// numbers (no sign, no exponent, a digit on each side of a point).
public struct QuantityText {
    let value: Double
    /// What follows the number, as written (may be empty).
    let unit: Substring

    init?(_ text: String) {
        let trimmed = text.trimmingSpaces
        let numberEnd = trimmed.firstIndex(where: { !($0.isASCII && ($0.isNumber || $0 == ".")) }) ?? trimmed.endIndex
        let number = trimmed[..<numberEnd]
        guard !number.isEmpty, number.filter({ $0 == "." }).count <= 1, number.first != ".", number.last != ".",
              let value = Double(number) else { return nil }
        self.value = value
        self.unit = trimmed[numberEnd...]
    }

    /// Whether what follows the number is an exponent (`1e9`), which no quantity takes.
    var unitIsExponent: Bool {
        guard let first = unit.first, first == "e" || first == "E" else { return false }
        let digits = unit.dropFirst().drop { $0 == "+" || $0 == "-" }
        return !digits.isEmpty && digits.allSatisfy { $0.isASCII && $0.isNumber }
    }

    /// The reason given for a number written with an exponent: the number written out, as it was meant.
    var exponentRefused: ValueError {
        let exponent = Double(String(unit.dropFirst())) ?? 0
        let meant = value * pow(10, exponent)
        let spelled = meant.isFinite && meant < 1e18 && meant == meant.rounded() ? String(Int64(meant)) : "the number in digits"
        return ValueError.invalid("exponents are not taken: write the number out, as \(spelled)")
    }

    /// `text` as a plain decimal number (what quantities take), nil otherwise.
    public static func plainDecimal(_ text: Substring) -> Double? {
        guard let quantity = QuantityText(String(text)), quantity.unit.isEmpty else { return nil }
        return quantity.value
    }
}
