/// A number followed by an optional unit, as in `1.5GiB` or `30m`: what
/// `ByteSize` and `TimeSpan` have in common. Only plain decimals are numbers
/// (no sign, no exponent, a digit on each side of a point).
struct QuantityText {
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
}
