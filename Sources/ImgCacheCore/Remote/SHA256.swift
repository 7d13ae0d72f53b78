import CImgCacheShims

/// SHA-256 through libcrypto, loaded when a remote store is first used (a
/// local hit never maps it).
public enum SHA256 {
    /// Why no digest could be made.
    public struct Unavailable: Error, Equatable, Sendable {
        public let reason: String
    }

    /// The 32-byte digest of `bytes`, as 64 lowercase hex digits.
    public static func hex(_ bytes: [UInt8]) throws(Unavailable) -> String {
        var error = [CChar](repeating: 0, count: 256)
        guard ic_crypto_load(&error, error.count) == 0 else {
            throw Unavailable(reason: String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        var digest = [UInt8](repeating: 0, count: 32)
        let status = bytes.withUnsafeBytes { raw in ic_sha256(raw.baseAddress, raw.count, &digest) }
        guard status == 0 else { throw Unavailable(reason: "SHA-256 failed") }
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: digest.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }, as: UTF8.self)
    }
}
