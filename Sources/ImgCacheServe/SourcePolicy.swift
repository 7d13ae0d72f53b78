import ImgCacheCore

/// Which sources a server fetches (`--allow-source`, as imgproxy's ALLOWED_SOURCES): none
/// given, any http(s) URL; else one that starts with a given prefix, where `*` stands for any
/// run of characters but `/`.
public struct SourcePolicy: Equatable, Sendable {
    public let prefixes: [String]

    /// Why a prefix cannot be taken.
    public struct Problem: Error, Equatable, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// Takes `prefixes`, each `http://` or `https://` with the slash after its host: without it,
    /// `https://example.com` would let `https://example.com.attacker.net/` through too.
    public init(prefixes: [String]) throws(Problem) {
        for prefix in prefixes {
            let lower = prefix.lowercased()
            guard let schemeEnd = lower.firstRange(of: "://"), ["http", "https", "http*", "*"].contains(String(lower[..<schemeEnd.lowerBound])) else {
                throw Problem(description: "--allow-source '\(prefix)' does not start with http:// or https://")
            }
            guard lower[schemeEnd.upperBound...].contains("/") else {
                throw Problem(description: "--allow-source '\(prefix)' needs the slash after its host (\(prefix)/): without it, "
                              + "\(prefix).attacker.example would be allowed too")
            }
        }
        self.prefixes = prefixes
    }

    public static let any = try! SourcePolicy(prefixes: [])

    /// Whether the source `url` (as parsed: scheme and host in lower case) may be fetched.
    public func allows(_ url: RemoteURL) -> Bool {
        guard !prefixes.isEmpty else { return true }
        let text = Array(URLText.normalized(url.string).utf8)
        return prefixes.contains { SourcePolicy.matches(Array($0.utf8), text) }
    }

    /// Whether `pattern` matches a prefix of `text`, `*` standing for any run without `/`
    /// (scheme and host compared without regard to case).
    static func matches(_ pattern: [UInt8], _ text: [UInt8]) -> Bool {
        func lower(_ byte: UInt8) -> UInt8 { byte >= 65 && byte <= 90 ? byte + 32 : byte }
        func match(_ p: Int, _ t: Int) -> Bool {
            if p == pattern.count { return true }
            if pattern[p] == UInt8(ascii: "*") {
                var end = t
                while true {
                    if match(p + 1, end) { return true }
                    guard end < text.count, text[end] != UInt8(ascii: "/") else { return false }
                    end += 1
                }
            }
            guard t < text.count, lower(pattern[p]) == lower(text[t]) else { return false }
            return match(p + 1, t + 1)
        }
        return match(0, 0)
    }
}
