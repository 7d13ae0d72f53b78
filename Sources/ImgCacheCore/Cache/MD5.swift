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
    private static func compress(_ state: inout (UInt32, UInt32, UInt32, UInt32), _ block: UnsafeRawPointer) {
        @inline(__always) func word(_ index: Int) -> UInt32 {
            UInt32(littleEndian: block.loadUnaligned(fromByteOffset: index &* 4, as: UInt32.self))
        }
        var (a, b, c, d) = state
        @inline(__always) func step(_ f: UInt32, _ round: Int, _ g: Int) {
            let sum = f &+ a &+ constants[round] &+ word(g)
            let shift = shifts[round]
            a = d
            d = c
            c = b
            b = b &+ ((sum << shift) | (sum >> (32 &- shift)))
        }
        for round in 0..<16 { step((b & c) | (~b & d), round, round) }
        for round in 16..<32 { step((d & b) | (~d & c), round, (5 &* round &+ 1) & 15) }
        for round in 32..<48 { step(b ^ c ^ d, round, (3 &* round &+ 5) & 15) }
        for round in 48..<64 { step(c ^ (b | ~d), round, (7 &* round) & 15) }
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

    private static let shifts: [UInt32] = [
        7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
        5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
        4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
        6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
    ]

    /// floor(abs(sin(i + 1)) * 2^32), as RFC 1321 tabulates them.
    private static let constants: [UInt32] = [
        0xd76a_a478, 0xe8c7_b756, 0x2420_70db, 0xc1bd_ceee, 0xf57c_0faf, 0x4787_c62a, 0xa830_4613, 0xfd46_9501,
        0x6980_98d8, 0x8b44_f7af, 0xffff_5bb1, 0x895c_d7be, 0x6b90_1122, 0xfd98_7193, 0xa679_438e, 0x49b4_0821,
        0xf61e_2562, 0xc040_b340, 0x265e_5a51, 0xe9b6_c7aa, 0xd62f_105d, 0x0244_1453, 0xd8a1_e681, 0xe7d3_fbc8,
        0x21e1_cde6, 0xc337_07d6, 0xf4d5_0d87, 0x455a_14ed, 0xa9e3_e905, 0xfcef_a3f8, 0x676f_02d9, 0x8d2a_4c8a,
        0xfffa_3942, 0x8771_f681, 0x6d9d_6122, 0xfde5_380c, 0xa4be_ea44, 0x4bde_cfa9, 0xf6bb_4b60, 0xbebf_bc70,
        0x289b_7ec6, 0xeaa1_27fa, 0xd4ef_3085, 0x0488_1d05, 0xd9d4_d039, 0xe6db_99e5, 0x1fa2_7cf8, 0xc4ac_5665,
        0xf429_2244, 0x432a_ff97, 0xab94_23a7, 0xfc93_a039, 0x655b_59c3, 0x8f0c_cc92, 0xffef_f47d, 0x8584_5dd1,
        0x6fa8_7e4f, 0xfe2c_e6e0, 0xa301_4314, 0x4e08_11a1, 0xf753_7e82, 0xbd3a_f235, 0x2ad7_d2bb, 0xeb86_d391,
    ]
}
