import ImgCacheCore

/// imgproxy's URL signature: URL-safe base64 (no padding) of HMAC-SHA256 under the key, of the
/// salt followed by the path after the signature, cut to `size` bytes. Several key and salt
/// pairs may be in use at once (a rotation): a signature made with any of them is taken.
public struct URLSignature: Sendable {
    /// One key and its salt, as bytes (written in hex).
    public struct Pair: Equatable, Sendable {
        public let key: [UInt8]
        public let salt: [UInt8]

        public init(key: [UInt8], salt: [UInt8]) {
            self.key = key
            self.salt = salt
        }
    }

    public let pairs: [Pair]
    /// Bytes of the digest the signature keeps (imgproxy's IMGPROXY_SIGNATURE_SIZE), 1 to 32.
    public let size: Int

    public init(pairs: [Pair], size: Int = 32) {
        self.pairs = pairs
        self.size = size
    }

    /// Why keys could not be read.
    public struct Problem: Error, Equatable, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// The pairs of imgproxy's variables: IMGPROXY_KEY and IMGPROXY_SALT, each a hex string or
    /// several separated by commas (paired in order); none when neither is set.
    public static func pairs(keys: String?, salts: String?) throws(Problem) -> [Pair] {
        let keyList = (keys ?? "").split(separator: ",").map { $0.trimmingCharacters() }.filter { !$0.isEmpty }
        let saltList = (salts ?? "").split(separator: ",").map { $0.trimmingCharacters() }.filter { !$0.isEmpty }
        guard keyList.count == saltList.count else {
            throw Problem(description: "IMGPROXY_KEY has \(keyList.count) key(s) and IMGPROXY_SALT \(saltList.count) salt(s): they are paired in order")
        }
        var pairs: [Pair] = []
        for (index, (key, salt)) in zip(keyList, saltList).enumerated() {
            guard let keyBytes = hexBytes(key), !keyBytes.isEmpty else { throw Problem(description: "key \(index + 1) is not hex") }
            guard let saltBytes = hexBytes(salt), !saltBytes.isEmpty else { throw Problem(description: "salt \(index + 1) is not hex") }
            pairs.append(Pair(key: keyBytes, salt: saltBytes))
        }
        return pairs
    }

    /// The pairs of a key file: a line `KEY SALT` (hex, separated by spaces or a colon) for each
    /// pair; blank lines and lines starting with # are skipped.
    public static func pairs(fileText: String) throws(Problem) -> [Pair] {
        var pairs: [Pair] = []
        for (number, line) in fileText.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let text = line.trimmingCharacters()
            if text.isEmpty || text.hasPrefix("#") { continue }
            let parts = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == ":" })
            guard parts.count == 2, let key = hexBytes(String(parts[0])), let salt = hexBytes(String(parts[1])),
                  !key.isEmpty, !salt.isEmpty else {
                throw Problem(description: "line \(number + 1) is not 'KEY SALT' in hex")
            }
            pairs.append(Pair(key: key, salt: salt))
        }
        return pairs
    }

    /// The signature of `signedPart` under `pair`.
    public func signature(of signedPart: String, with pair: Pair) throws(SHA256.Unavailable) -> String {
        let digest = try SHA256.hmac(key: pair.key, message: pair.salt + Array(signedPart.utf8))
        return Base64.urlEncoded(Array(digest.prefix(size)))
    }

    /// Whether `signature` signs `signedPart` under one of the pairs (compared in constant time).
    public func accepts(_ signature: String, for signedPart: String) throws(SHA256.Unavailable) -> Bool {
        let given = Array(signature.utf8)
        var accepted = false
        for pair in pairs {
            let expected = Array(try self.signature(of: signedPart, with: pair).utf8)
            guard expected.count == given.count else { continue }
            var difference: UInt8 = 0
            for (a, b) in zip(expected, given) { difference |= a ^ b }
            if difference == 0 { accepted = true }
        }
        return accepted
    }

    static func hexBytes(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = hexValue(digits[index]), let low = hexValue(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }
}

/// The value of one hex digit, either case; nil when `digit` is none.
func hexValue(_ digit: UInt8?) -> UInt8? {
    switch digit {
    case let d? where d >= 48 && d <= 57: return d - 48
    case let d? where d >= 65 && d <= 70: return d - 55
    case let d? where d >= 97 && d <= 102: return d - 87
    default: return nil
    }
}

extension StringProtocol {
    /// Without spaces, tabs and line ends at either end.
    func trimmingCharacters() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" || $0 == "\n" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[first...last])
    }
}
