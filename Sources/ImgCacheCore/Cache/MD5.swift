/// MD5 (RFC 1321) of a byte sequence, for cache file names.
///
/// It is computed here rather than through OpenSSL because a cache hit must not
/// load libcrypto (about 1 ms of dynamic linking, a third of a whole hit). The
/// tests check it against OpenSSL's EVP MD5. It names files; it is not security.
public enum MD5 {
    /// The 16-byte digest of `bytes`.
    public static func digest<Bytes: Collection>(_ bytes: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        let state = Array(bytes).withUnsafeBytes(words)
        return [state.0, state.1, state.2, state.3].flatMap { word in
            (0..<4).map { UInt8(truncatingIfNeeded: word >> UInt32($0 * 8)) }
        }
    }

    /// The digest of `bytes` as RFC 1321's four words (A, B, C, D; each little-endian in the
    /// digest's bytes). Every lookup keys a URL through here, so it reads the bytes where
    /// they are: no copy, no array, the padding in a block on the stack.
    static func words(_ bytes: UnsafeRawBufferPointer) -> (UInt32, UInt32, UInt32, UInt32) {
        var state: (UInt32, UInt32, UInt32, UInt32) = (0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476)
        let whole = bytes.count / 64 * 64
        var offset = 0
        while offset < whole {
            compress(&state, bytes.baseAddress! + offset)
            offset += 64
        }
        // The rest, the 0x80 byte and the bit length: one block, or two when the rest leaves no room.
        withUnsafeTemporaryAllocation(byteCount: 128, alignment: 8) { tail in
            tail.initializeMemory(as: UInt8.self, repeating: 0)
            let rest = bytes.count - whole
            if rest > 0 { tail.baseAddress!.copyMemory(from: bytes.baseAddress! + whole, byteCount: rest) }
            tail[rest] = 0x80
            let length = rest < 56 ? 64 : 128
            tail.storeBytes(of: (UInt64(bytes.count) &* 8).littleEndian, toByteOffset: length - 8, as: UInt64.self)
            compress(&state, UnsafeRawPointer(tail.baseAddress!))
            if length == 128 { compress(&state, UnsafeRawPointer(tail.baseAddress! + 64)) }
        }
        return state
    }

    /// One 64-byte block into the state (RFC 1321 §3.4).
    /// RFC 1321's 64 steps on one 64-byte block, written out (constants and shifts in the code: a
    /// table looked up per step cost twice the instructions, and every key is hashed).
    private static func compress(_ state: inout (UInt32, UInt32, UInt32, UInt32), _ block: UnsafeRawPointer) {
        @inline(__always) func word(_ index: Int) -> UInt32 {
            UInt32(littleEndian: block.loadUnaligned(fromByteOffset: index &* 4, as: UInt32.self))
        }
        @inline(__always) func rotate(_ value: UInt32, _ shift: UInt32) -> UInt32 { (value << shift) | (value >> (32 &- shift)) }
        let w0 = word(0)
        let w1 = word(1)
        let w2 = word(2)
        let w3 = word(3)
        let w4 = word(4)
        let w5 = word(5)
        let w6 = word(6)
        let w7 = word(7)
        let w8 = word(8)
        let w9 = word(9)
        let w10 = word(10)
        let w11 = word(11)
        let w12 = word(12)
        let w13 = word(13)
        let w14 = word(14)
        let w15 = word(15)
        var (a, b, c, d) = state
        a = b &+ rotate(a &+ ((b & c) | (~b & d)) &+ 0xd76aa478 &+ w0, 7)
        d = a &+ rotate(d &+ ((a & b) | (~a & c)) &+ 0xe8c7b756 &+ w1, 12)
        c = d &+ rotate(c &+ ((d & a) | (~d & b)) &+ 0x242070db &+ w2, 17)
        b = c &+ rotate(b &+ ((c & d) | (~c & a)) &+ 0xc1bdceee &+ w3, 22)
        a = b &+ rotate(a &+ ((b & c) | (~b & d)) &+ 0xf57c0faf &+ w4, 7)
        d = a &+ rotate(d &+ ((a & b) | (~a & c)) &+ 0x4787c62a &+ w5, 12)
        c = d &+ rotate(c &+ ((d & a) | (~d & b)) &+ 0xa8304613 &+ w6, 17)
        b = c &+ rotate(b &+ ((c & d) | (~c & a)) &+ 0xfd469501 &+ w7, 22)
        a = b &+ rotate(a &+ ((b & c) | (~b & d)) &+ 0x698098d8 &+ w8, 7)
        d = a &+ rotate(d &+ ((a & b) | (~a & c)) &+ 0x8b44f7af &+ w9, 12)
        c = d &+ rotate(c &+ ((d & a) | (~d & b)) &+ 0xffff5bb1 &+ w10, 17)
        b = c &+ rotate(b &+ ((c & d) | (~c & a)) &+ 0x895cd7be &+ w11, 22)
        a = b &+ rotate(a &+ ((b & c) | (~b & d)) &+ 0x6b901122 &+ w12, 7)
        d = a &+ rotate(d &+ ((a & b) | (~a & c)) &+ 0xfd987193 &+ w13, 12)
        c = d &+ rotate(c &+ ((d & a) | (~d & b)) &+ 0xa679438e &+ w14, 17)
        b = c &+ rotate(b &+ ((c & d) | (~c & a)) &+ 0x49b40821 &+ w15, 22)
        a = b &+ rotate(a &+ ((d & b) | (~d & c)) &+ 0xf61e2562 &+ w1, 5)
        d = a &+ rotate(d &+ ((c & a) | (~c & b)) &+ 0xc040b340 &+ w6, 9)
        c = d &+ rotate(c &+ ((b & d) | (~b & a)) &+ 0x265e5a51 &+ w11, 14)
        b = c &+ rotate(b &+ ((a & c) | (~a & d)) &+ 0xe9b6c7aa &+ w0, 20)
        a = b &+ rotate(a &+ ((d & b) | (~d & c)) &+ 0xd62f105d &+ w5, 5)
        d = a &+ rotate(d &+ ((c & a) | (~c & b)) &+ 0x02441453 &+ w10, 9)
        c = d &+ rotate(c &+ ((b & d) | (~b & a)) &+ 0xd8a1e681 &+ w15, 14)
        b = c &+ rotate(b &+ ((a & c) | (~a & d)) &+ 0xe7d3fbc8 &+ w4, 20)
        a = b &+ rotate(a &+ ((d & b) | (~d & c)) &+ 0x21e1cde6 &+ w9, 5)
        d = a &+ rotate(d &+ ((c & a) | (~c & b)) &+ 0xc33707d6 &+ w14, 9)
        c = d &+ rotate(c &+ ((b & d) | (~b & a)) &+ 0xf4d50d87 &+ w3, 14)
        b = c &+ rotate(b &+ ((a & c) | (~a & d)) &+ 0x455a14ed &+ w8, 20)
        a = b &+ rotate(a &+ ((d & b) | (~d & c)) &+ 0xa9e3e905 &+ w13, 5)
        d = a &+ rotate(d &+ ((c & a) | (~c & b)) &+ 0xfcefa3f8 &+ w2, 9)
        c = d &+ rotate(c &+ ((b & d) | (~b & a)) &+ 0x676f02d9 &+ w7, 14)
        b = c &+ rotate(b &+ ((a & c) | (~a & d)) &+ 0x8d2a4c8a &+ w12, 20)
        a = b &+ rotate(a &+ (b ^ c ^ d) &+ 0xfffa3942 &+ w5, 4)
        d = a &+ rotate(d &+ (a ^ b ^ c) &+ 0x8771f681 &+ w8, 11)
        c = d &+ rotate(c &+ (d ^ a ^ b) &+ 0x6d9d6122 &+ w11, 16)
        b = c &+ rotate(b &+ (c ^ d ^ a) &+ 0xfde5380c &+ w14, 23)
        a = b &+ rotate(a &+ (b ^ c ^ d) &+ 0xa4beea44 &+ w1, 4)
        d = a &+ rotate(d &+ (a ^ b ^ c) &+ 0x4bdecfa9 &+ w4, 11)
        c = d &+ rotate(c &+ (d ^ a ^ b) &+ 0xf6bb4b60 &+ w7, 16)
        b = c &+ rotate(b &+ (c ^ d ^ a) &+ 0xbebfbc70 &+ w10, 23)
        a = b &+ rotate(a &+ (b ^ c ^ d) &+ 0x289b7ec6 &+ w13, 4)
        d = a &+ rotate(d &+ (a ^ b ^ c) &+ 0xeaa127fa &+ w0, 11)
        c = d &+ rotate(c &+ (d ^ a ^ b) &+ 0xd4ef3085 &+ w3, 16)
        b = c &+ rotate(b &+ (c ^ d ^ a) &+ 0x04881d05 &+ w6, 23)
        a = b &+ rotate(a &+ (b ^ c ^ d) &+ 0xd9d4d039 &+ w9, 4)
        d = a &+ rotate(d &+ (a ^ b ^ c) &+ 0xe6db99e5 &+ w12, 11)
        c = d &+ rotate(c &+ (d ^ a ^ b) &+ 0x1fa27cf8 &+ w15, 16)
        b = c &+ rotate(b &+ (c ^ d ^ a) &+ 0xc4ac5665 &+ w2, 23)
        a = b &+ rotate(a &+ (c ^ (b | ~d)) &+ 0xf4292244 &+ w0, 6)
        d = a &+ rotate(d &+ (b ^ (a | ~c)) &+ 0x432aff97 &+ w7, 10)
        c = d &+ rotate(c &+ (a ^ (d | ~b)) &+ 0xab9423a7 &+ w14, 15)
        b = c &+ rotate(b &+ (d ^ (c | ~a)) &+ 0xfc93a039 &+ w5, 21)
        a = b &+ rotate(a &+ (c ^ (b | ~d)) &+ 0x655b59c3 &+ w12, 6)
        d = a &+ rotate(d &+ (b ^ (a | ~c)) &+ 0x8f0ccc92 &+ w3, 10)
        c = d &+ rotate(c &+ (a ^ (d | ~b)) &+ 0xffeff47d &+ w10, 15)
        b = c &+ rotate(b &+ (d ^ (c | ~a)) &+ 0x85845dd1 &+ w1, 21)
        a = b &+ rotate(a &+ (c ^ (b | ~d)) &+ 0x6fa87e4f &+ w8, 6)
        d = a &+ rotate(d &+ (b ^ (a | ~c)) &+ 0xfe2ce6e0 &+ w15, 10)
        c = d &+ rotate(c &+ (a ^ (d | ~b)) &+ 0xa3014314 &+ w6, 15)
        b = c &+ rotate(b &+ (d ^ (c | ~a)) &+ 0x4e0811a1 &+ w13, 21)
        a = b &+ rotate(a &+ (c ^ (b | ~d)) &+ 0xf7537e82 &+ w4, 6)
        d = a &+ rotate(d &+ (b ^ (a | ~c)) &+ 0xbd3af235 &+ w11, 10)
        c = d &+ rotate(c &+ (a ^ (d | ~b)) &+ 0x2ad7d2bb &+ w2, 15)
        b = c &+ rotate(b &+ (d ^ (c | ~a)) &+ 0xeb86d391 &+ w9, 21)
        state = (state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d)
    }

    /// HMAC-MD5 (RFC 2104) of `message` under `key`: a digest nobody can check a guess
    /// against without the key.
    static func authenticationCode(_ message: [UInt8], key: [UInt8]) -> [UInt8] {
        var block = key.count > 64 ? digest(key) : key
        block += [UInt8](repeating: 0, count: 64 - block.count)
        let inner = digest(block.map { $0 ^ 0x36 } + message)
        return digest(block.map { $0 ^ 0x5C } + inner)
    }

    /// The digest of the UTF-8 bytes of `text`, as 32 lowercase hex digits.
    public static func hex(_ text: String) -> String {
        var text = text
        return hex(text.withUTF8 { words(UnsafeRawBufferPointer($0)) })
    }

    /// A digest's four words as the 32 lowercase hex digits of its bytes.
    static func hex(_ state: (UInt32, UInt32, UInt32, UInt32)) -> String {
        String(unsafeUninitializedCapacity: 32) { out in
            func put(_ word: UInt32, at start: Int) {
                for position in 0..<4 {
                    let byte = UInt8(truncatingIfNeeded: word >> UInt32(position * 8))
                    out[start + position * 2] = hexDigit(byte >> 4)
                    out[start + position * 2 + 1] = hexDigit(byte & 0x0f)
                }
            }
            put(state.0, at: 0)
            put(state.1, at: 8)
            put(state.2, at: 16)
            put(state.3, at: 24)
            return 32
        }
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? 0x30 + value : 0x61 + value - 10
    }

    /// `bytes` as lowercase hex.
    public static func hexString(_ bytes: [UInt8]) -> String {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
