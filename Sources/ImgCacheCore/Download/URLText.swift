/// How raw input becomes the URL text imgcache requests and keys by.
///
/// Input arrives as bytes (a list file, a pipe, argv), not always UTF-8. Bytes
/// that are not valid UTF-8 are percent-encoded as they are (`0xE9` becomes
/// `%E9`), which is what a server sees from curl; decoding them as U+FFFD
/// would ask for a different resource. A fragment (`#...`) never reaches a
/// server, so it is no part of a request or a key.
public enum URLText {
    /// `bytes` as text: valid UTF-8 as it is, every other byte as `%XX`.
    /// (Not generic: it runs at start-up, where a generic call costs a
    /// runtime lookup of its conformances.)
    public static func decode(_ bytes: UnsafeRawBufferPointer) -> String {
        let buffer = bytes.bindMemory(to: UInt8.self)
        // ASCII (nearly every URL, every option) is UTF-8 already: made without the validating
        // initialiser, whose generic path costs some thousands of instructions a call.
        if !buffer.contains(where: { $0 >= 0x80 }) { return String(decoding: buffer, as: UTF8.self) }
        if let valid = String(validating: buffer, as: UTF8.self) { return valid }
        var text = ""
        text.reserveCapacity(bytes.count + 8)
        var index = 0
        while index < buffer.count {
            let length = validSequenceLength(UnsafeBufferPointer(rebasing: buffer[index...]))
            if length == 0 {
                text += percentEncoded(buffer[index])
                index += 1
            } else {
                text += String(decoding: UnsafeBufferPointer(rebasing: buffer[index..<index + length]), as: UTF8.self)
                index += length
            }
        }
        return text
    }

    /// `decode` of an array's bytes.
    public static func decode(_ bytes: [UInt8]) -> String {
        bytes.withUnsafeBytes { decode($0) }
    }

    /// `decode` of a slice's bytes.
    public static func decode(_ bytes: ArraySlice<UInt8>) -> String {
        bytes.withUnsafeBytes { decode($0) }
    }

    /// The URL without its fragment: what is requested and keyed.
    public static func withoutFragment(_ url: String) -> String {
        guard let hash = url.firstUTF8Index(of: UInt8(ascii: "#")) else { return url }
        return String(url[..<hash])
    }

    /// The length of the valid UTF-8 sequence `bytes` starts with; 0 when its first byte starts none.
    static func validSequenceLength(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        guard let first = bytes.first else { return 0 }
        let length: Int
        switch first {
        case 0x00...0x7F: return 1
        case 0xC2...0xDF: length = 2
        case 0xE0...0xEF: length = 3
        case 0xF0...0xF4: length = 4
        default: return 0
        }
        guard bytes.count >= length,
              String(validating: UnsafeBufferPointer(rebasing: bytes[0..<length]), as: UTF8.self) != nil else { return 0 }
        return length
    }

    /// Where a URL's authority starts in its bytes: just after the first `://` found before
    /// `end`; nil without one.
    static func authorityStart(in bytes: UnsafeBufferPointer<UInt8>, before end: Int) -> Int? {
        (0..<max(0, end - 2)).first {
            bytes[$0] == UInt8(ascii: ":") && bytes[$0 + 1] == UInt8(ascii: "/") && bytes[$0 + 2] == UInt8(ascii: "/")
        }.map { $0 + 3 }
    }

    private static func percentEncoded(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        return String(decoding: [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]], as: UTF8.self)
    }
}
