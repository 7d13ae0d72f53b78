import CImgCacheShims

/// A host name with letters past ASCII in the form DNS and HTTP carry (`bücher.example` is
/// `xn--bcher-kva.example`), as curl and browsers send it: by libidn2, as curl does (NFC first,
/// so a name typed decomposed is the same name, and UTS #46's mapping, a full-width dot a dot);
/// where libidn2 is missing, each such label lower-cased and Punycode-encoded (RFC 3492) here.
/// So a URL with such a host is fetched, and its spellings share one cache entry.
package enum Punycode {
    /// `host` with every label holding a letter past ASCII encoded; nil when it has none (it is
    /// used as it is) or cannot be encoded.
    package static func asciiHost<S: StringProtocol>(_ host: S) -> String? {
        guard host.utf8.contains(where: { $0 >= 0x80 }) else { return nil }
        var output = [CChar](repeating: 0, count: 1024)
        var error = [CChar](repeating: 0, count: 256)
        switch ic_idn_to_ascii(String(host), &output, output.count, &error, error.count) {
        case 0: return String(decoding: output.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        case 1: return nil
        default: return encodedHere(host)
        }
    }

    /// Whether an IDNA form holds only a name's bytes (letters, digits, `-`, `.`, `_`): IDNA maps
    /// fullwidth `：／＃？＠` to ASCII delimiters, which must not become another port, path or user.
    package static func isName(_ ascii: String) -> Bool {
        ascii.utf8.allSatisfy { byte in
            // `| 0x20` lowercases a letter and lands nothing else on a..z.
            (0x30...0x39).contains(byte) || (0x61...0x7A).contains(byte | 0x20) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
        }
    }

    /// `asciiHost` without libidn2: labels lower-cased and encoded, no normalisation or mapping.
    package static func encodedHere<S: StringProtocol>(_ host: S) -> String? {
        var labels: [String] = []
        for label in host.lowercased().split(separator: ".", omittingEmptySubsequences: false) {
            guard label.utf8.contains(where: { $0 >= 0x80 }) else {
                labels.append(String(label))
                continue
            }
            guard let encoded = encode(Array(label.unicodeScalars.map(\.value))) else { return nil }
            labels.append("xn--" + encoded)
        }
        return labels.joined(separator: ".")
    }

    private static let base = 36, tMin = 1, tMax = 26, skew = 38, damp = 700

    /// RFC 3492 §6.3's encoding of `input`'s code points.
    package static func encode(_ input: [UInt32]) -> String? {
        var output: [UInt8] = input.filter { $0 < 0x80 }.map { UInt8($0) }
        let basic = output.count
        var handled = basic
        if basic > 0 { output.append(UInt8(ascii: "-")) }
        var n: UInt32 = 128, delta = 0, bias = 72
        while handled < input.count {
            guard let next = input.filter({ $0 >= n }).min() else { return nil }
            let (step, overflow) = Int(next - n).multipliedReportingOverflow(by: handled + 1)
            guard !overflow, delta <= Int(Int32.max) - step else { return nil }
            delta += step
            n = next
            for code in input {
                if code < n { delta += 1 }
                guard code == n else { continue }
                var q = delta, k = base
                while true {
                    let t = k <= bias ? tMin : (k >= bias + tMax ? tMax : k - bias)
                    if q < t { break }
                    output.append(digit(t + (q - t) % (base - t)))
                    q = (q - t) / (base - t)
                    k += base
                }
                output.append(digit(q))
                bias = adapt(delta, points: handled + 1, first: handled == basic)
                delta = 0
                handled += 1
            }
            delta += 1
            n += 1
        }
        return String(decoding: output, as: UTF8.self)
    }

    private static func digit(_ value: Int) -> UInt8 {
        value < 26 ? UInt8(ascii: "a") + UInt8(value) : UInt8(ascii: "0") + UInt8(value - 26)
    }

    private static func adapt(_ delta: Int, points: Int, first: Bool) -> Int {
        var delta = first ? delta / damp : delta / 2
        delta += delta / points
        var k = 0
        while delta > ((base - tMin) * tMax) / 2 {
            delta /= base - tMin
            k += base
        }
        return k + (base - tMin + 1) * delta / (delta + skew)
    }
}
