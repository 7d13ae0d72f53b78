/// Text made safe for an HTML page: attribute values and text escaped, file
/// paths written as URL paths (a space or comma would end a `srcset` candidate).
public enum HTMLText {
    /// `text` for a double-quoted attribute value or element text: `& < > " '` escaped, and line breaks and
    /// other control characters as numeric references, so that markup stays on one line.
    public static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { "&<>\"'".unicodeScalars.contains($0) || $0.value < 0x20 || $0.value == 0x7F
                                                     || (0x80...0x9F).contains($0.value) || $0.value == 0x2028 || $0.value == 0x2029 }) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            // Tab, line feed and carriage return are allowed as references; other controls are not characters HTML keeps.
            case "\t", "\n", "\r": out += "&#\(scalar.value);"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F || (0x80...0x9F).contains(scalar.value): out += "\u{FFFD}"
            case "\u{2028}", "\u{2029}": out += "&#\(scalar.value);"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// A file path as a URL path: every byte but unreserved ones (`A-Z a-z 0-9 - . _ ~`) and `/` percent-encoded.
    public static func urlPath(_ path: String) -> String {
        var out: [UInt8] = []
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "/"):
                out.append(byte)
            default:
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
