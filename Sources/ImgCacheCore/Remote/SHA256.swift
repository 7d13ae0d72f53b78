#if canImport(Glibc)
import Glibc
#endif
import CImgCacheShims

/// SHA-256 through libcrypto, loaded when first needed: a remote store, a
/// pinned URL (an unpinned local hit never maps it).
public enum SHA256 {
    /// Why no digest could be made.
    public struct Unavailable: Error, Equatable, Sendable {
        public let reason: String
    }

    /// The 32-byte digest of `bytes`, as 64 lowercase hex digits.
    public static func hex(_ bytes: [UInt8]) throws(Unavailable) -> String {
        try load()
        var digest = [UInt8](repeating: 0, count: 32)
        let status = bytes.withUnsafeBytes { raw in ic_sha256(raw.baseAddress, raw.count, &digest) }
        guard status == 0 else { throw Unavailable(reason: "SHA-256 failed") }
        return hex(digest: digest)
    }

    /// The 32-byte digest of `bytes`.
    public static func digest(_ bytes: [UInt8]) throws(Unavailable) -> [UInt8] {
        try load()
        var digest = [UInt8](repeating: 0, count: 32)
        let status = bytes.withUnsafeBytes { raw in ic_sha256(raw.baseAddress, raw.count, &digest) }
        guard status == 0 else { throw Unavailable(reason: "SHA-256 failed") }
        return digest
    }

    /// HMAC-SHA256 (RFC 2104) of `message` under `key`.
    public static func hmac(key: [UInt8], message: [UInt8]) throws(Unavailable) -> [UInt8] {
        var block = key.count > 64 ? try digest(key) : key
        block += [UInt8](repeating: 0, count: 64 - block.count)
        let inner = try digest(block.map { $0 ^ 0x36 } + message)
        return try digest(block.map { $0 ^ 0x5c } + inner)
    }

    /// The digest of the file at `path`, read in chunks, as 64 lowercase hex digits.
    public static func hex(file path: String) throws(Unavailable) -> String {
        try load()
        guard case .success(let descriptor) = SystemCall.open(path, O_RDONLY | O_CLOEXEC) else {
            throw Unavailable(reason: "cannot read \(path)")
        }
        defer { SystemCall.close(descriptor) }
        var digest = [UInt8](repeating: 0, count: 32)
        guard ic_sha256_file(descriptor, &digest) == 0 else { throw Unavailable(reason: "cannot read \(path)") }
        return hex(digest: digest)
    }

    private static func load() throws(Unavailable) {
        var error = [CChar](repeating: 0, count: 256)
        guard ic_crypto_load(&error, error.count) == 0 else {
            throw Unavailable(reason: String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
    }

    private static func hex(digest: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: digest.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }, as: UTF8.self)
    }
}
