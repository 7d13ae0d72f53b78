/// An opaque colour: what transparent pixels become in a format without
/// alpha (`--background`).
public struct RGBColor: Equatable, Hashable, Sendable, CustomStringConvertible {
    public let red: UInt8
    public let green: UInt8
    public let blue: UInt8

    public init(red: UInt8, green: UInt8, blue: UInt8) {
        self.red = red
        self.green = green
        self.blue = blue
    }

    public static let white = RGBColor(red: 255, green: 255, blue: 255)
    public static let black = RGBColor(red: 0, green: 0, blue: 0)

    /// The names `--background` takes besides hex.
    public static let named: [(String, RGBColor)] = [
        ("white", .white), ("black", .black), ("gray", RGBColor(red: 128, green: 128, blue: 128)),
        ("red", RGBColor(red: 255, green: 0, blue: 0)), ("green", RGBColor(red: 0, green: 128, blue: 0)),
        ("blue", RGBColor(red: 0, green: 0, blue: 255)),
    ]

    /// Reads `white`, `#fff`, `#ffffff` or `ffffff`, in any case.
    public init(parsing text: String) throws(ValueError) {
        let lowered = text.lowercased()
        if let (_, color) = RGBColor.named.first(where: { $0.0 == lowered }) {
            self = color
            return
        }
        var digits = lowered.hasPrefix("#") ? String(lowered.dropFirst()) : lowered
        if digits.count == 3 { digits = digits.map { "\($0)\($0)" }.joined() }
        guard digits.count == 6, digits.allSatisfy(\.isHexDigit), let value = UInt32(digits, radix: 16) else {
            throw ValueError("expected a colour: #RRGGBB, #RGB or " + RGBColor.named.map(\.0).joined(separator: ", "))
        }
        self.init(red: UInt8(value >> 16), green: UInt8(value >> 8 & 0xFF), blue: UInt8(value & 0xFF))
    }

    /// `#rrggbb`.
    public var description: String {
        let hex = String(UInt32(red) << 16 | UInt32(green) << 8 | UInt32(blue), radix: 16)
        return "#" + String(repeating: "0", count: 6 - hex.count) + hex
    }
}
