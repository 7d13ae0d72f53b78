/// Base64 (RFC 4648, with padding), for data URIs and ThumbHashes.
public enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// `bytes` in base64.
    public static func encoded(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let count = min(3, bytes.count - index)
            let chunk = UInt32(bytes[index]) << 16 | (count > 1 ? UInt32(bytes[index + 1]) << 8 : 0) | (count > 2 ? UInt32(bytes[index + 2]) : 0)
            out.append(alphabet[Int(chunk >> 18 & 63)])
            out.append(alphabet[Int(chunk >> 12 & 63)])
            out.append(count > 1 ? alphabet[Int(chunk >> 6 & 63)] : UInt8(ascii: "="))
            out.append(count > 2 ? alphabet[Int(chunk & 63)] : UInt8(ascii: "="))
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of base64 `text` (padding optional); nil when a character is not base64.
    public static func decoded(_ text: String) -> [UInt8]? { decoded(text, alphabet: alphabet) }

    /// The bytes of `text` written in `alphabet` (padding optional); nil when a character is not of it.
    private static func decoded(_ text: String, alphabet: [UInt8]) -> [UInt8]? {
        var bits: UInt32 = 0, count = 0
        var out: [UInt8] = []
        for byte in text.utf8 where byte != UInt8(ascii: "=") {
            guard let value = alphabet.firstIndex(of: byte) else { return nil }
            bits = bits << 6 | UInt32(value)
            count += 6
            if count >= 8 {
                count -= 8
                out.append(UInt8(bits >> UInt32(count) & 255))
            }
        }
        return out
    }

    private static let urlAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// `bytes` in URL-safe base64 without padding (RFC 4648 section 5), as signatures in URLs are written.
    public static func urlEncoded(_ bytes: [UInt8]) -> String {
        String(decoding: encoded(bytes).utf8.compactMap { byte -> UInt8? in
            switch byte {
            case UInt8(ascii: "="): return nil
            case UInt8(ascii: "+"): return UInt8(ascii: "-")
            case UInt8(ascii: "/"): return UInt8(ascii: "_")
            default: return byte
            }
        }, as: UTF8.self)
    }

    /// The bytes of URL-safe base64 `text` (padding optional); nil when a character is not of its alphabet.
    public static func urlDecoded(_ text: String) -> [UInt8]? { decoded(text, alphabet: urlAlphabet) }
}
