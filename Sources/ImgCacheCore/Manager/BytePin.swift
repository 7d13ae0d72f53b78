/// The bytes a URL must serve, pinned by their SHA-256 in its fragment
/// (`URL#sha256=HEX`, pip's convention; a table's `sha256` column becomes
/// one). A fragment never reaches the server and is no part of the key: the
/// pin only decides whether bytes are taken, downloaded or cached.
public struct BytePin: Equatable, Sendable {
    /// 64 lowercase hexadecimal digits.
    public let sha256: String

    /// The pin in `url`'s fragment (`sha256=HEX`, alone or among `&`-separated
    /// parameters); nil when there is none. Throws why one is not 64 hex digits.
    public static func parse(_ url: String) throws(ValueError) -> BytePin? {
        // Every URL of a run passes here: the search is by byte, not by character.
        guard let hash = url.firstUTF8Index(of: UInt8(ascii: "#")) else { return nil }
        for parameter in url[url.index(after: hash)...].split(separator: "&") where parameter.lowercased().hasPrefix("sha256=") {
            let hex = parameter.dropFirst(7).lowercased()
            guard hex.count == 64, hex.allSatisfy({ $0.isHexDigit }) else {
                throw ValueError("the sha256 pin is not 64 hexadecimal digits")
            }
            return BytePin(sha256: hex)
        }
        return nil
    }

    /// Whether `bytes` are the pinned ones; the digest found otherwise.
    func check(_ bytes: [UInt8]) throws(SHA256.Unavailable) -> String? {
        let found = try SHA256.hex(bytes)
        return found == sha256 ? nil : found
    }

    /// Whether the file at `path` holds the pinned bytes; the digest found otherwise.
    func check(file path: String) throws(SHA256.Unavailable) -> String? {
        let found = try SHA256.hex(file: path)
        return found == sha256 ? nil : found
    }
}
