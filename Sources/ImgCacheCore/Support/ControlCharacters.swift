/// Writes control characters as escapes (`\r`, `\n`, `\t`, `\x1B`), C1
/// controls included, for text from outside (URLs, option values) that goes
/// into a message line: it can then neither break the line nor send terminal
/// sequences.
public enum ControlCharacters {
    public static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var shown = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\r": shown += "\\r"
            case "\n": shown += "\\n"
            case "\t": shown += "\\t"
            case _ where isControl(scalar):
                shown += "\\x" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16, uppercase: true)
            default: shown.unicodeScalars.append(scalar)
            }
        }
        return shown
    }

    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }
}
