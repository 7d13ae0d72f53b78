/// An http or https URL that passed imgcache's own checks before libcurl sees it.
public struct RemoteURL: Equatable, Hashable, Sendable {
    /// The URL exactly as given; it is the cache key.
    public let string: String
    /// `http` or `https`, lowercased.
    public let scheme: String
    /// The host, without user information or port.
    public let host: String

    /// Why a string is not a URL imgcache can fetch.
    public enum ParseError: Error, Equatable, Sendable {
        /// Not a URL at all; the text says what is wrong.
        case invalid(String)
        /// A URL whose scheme imgcache does not fetch (`ftp`, `file`, …).
        case unsupportedScheme(String)
    }

    public init(parsing text: String) throws(ParseError) {
        if let plain = Self.plainASCII(text) {
            self = plain
        } else {
            try self.init(checkingEveryCase: text)
        }
    }

    private init(string: String, scheme: String, host: String) {
        (self.string, self.scheme, self.host) = (string, scheme, host)
    }

    /// The common URL decided over its bytes: ASCII, `http://` or `https://` in any case, no user
    /// information, no IPv6 literal, a valid port or none. Nil for anything else, error or not, which
    /// `init(checkingEveryCase:)` decides: its answers and messages stay the only ones. (Every download
    /// parses its URL: by `Character`, a plain URL cost some 33,000 instructions.)
    package static func plainASCII(_ text: String) -> RemoteURL? {
        let parsed = text.utf8.withContiguousStorageIfAvailable { bytes -> (https: Bool, host: String)? in
            let count = bytes.count
            // `| 0x20` lowercases a letter; only "H"/"h" (and so on) land on the letter compared.
            func letter(_ index: Int, _ lower: UInt8) -> Bool { index < count && bytes[index] | 0x20 == lower }
            guard letter(0, UInt8(ascii: "h")), letter(1, UInt8(ascii: "t")), letter(2, UInt8(ascii: "t")),
                  letter(3, UInt8(ascii: "p")) else { return nil }
            let https = letter(4, UInt8(ascii: "s"))
            let colon = https ? 5 : 4
            guard colon + 2 < count, bytes[colon] == UInt8(ascii: ":"), bytes[colon + 1] == UInt8(ascii: "/"),
                  bytes[colon + 2] == UInt8(ascii: "/") else { return nil }
            // Spaces, controls, DEL and every byte past ASCII go the long way (refused, or an IDN host).
            if bytes.contains(where: { $0 <= 0x20 || $0 >= 0x7F }) { return nil }
            let start = colon + 3
            var end = start, portColon: Int?
            authority: while end < count {
                switch bytes[end] {
                case UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#"): break authority
                case UInt8(ascii: "@"), UInt8(ascii: "["), UInt8(ascii: "]"): return nil
                case UInt8(ascii: ":"): portColon = end
                default: break
                }
                end += 1
            }
            let hostEnd = portColon ?? end
            guard hostEnd > start else { return nil }
            if let portColon, portColon + 1 < end {
                var port = 0
                for index in portColon + 1 ..< end {
                    let digit = Int(bytes[index]) - Int(UInt8(ascii: "0"))
                    guard (0...9).contains(digit) else { return nil }
                    port = port * 10 + digit
                    guard port <= 65535 else { return nil }
                }
                guard port >= 1 else { return nil }
            }
            return (https, String(decoding: UnsafeBufferPointer(rebasing: bytes[start ..< hostEnd]), as: UTF8.self))
        }
        guard case let (https, host)?? = parsed else { return nil }
        return RemoteURL(string: text, scheme: https ? "https" : "http", host: host)
    }

    /// Every URL, by `Character`: the rules, and the message for each way a URL breaks them.
    package init(checkingEveryCase text: String) throws(ParseError) {
        if text.isEmpty { throw .invalid("the URL is empty") }
        if text.unicodeScalars.contains(where: { $0.value <= 0x20 || (0x7F...0x9F).contains($0.value) }) {
            throw .invalid("the URL contains a space or a control character (percent-encode it)")
        }
        guard let colon = text.firstIndex(of: ":"), colon != text.startIndex,
              text[..<colon].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }),
              text[text.startIndex].isLetter else {
            throw .invalid("no scheme (expected a URL starting with http:// or https://)")
        }
        let scheme = text[..<colon].lowercased()
        guard scheme == "http" || scheme == "https" else { throw .unsupportedScheme(scheme) }
        let afterColon = text[text.index(after: colon)...]
        guard afterColon.hasPrefix("//") else { throw .invalid("expected '//' after '\(scheme):'") }
        let authorityAndRest = afterColon.dropFirst(2)
        let authority = authorityAndRest.prefix(while: { $0 != "/" && $0 != "?" && $0 != "#" })
        let hostAndPort = authority.split(separator: "@", omittingEmptySubsequences: false).last ?? ""
        let host: Substring
        var port: Substring?
        if hostAndPort.hasPrefix("[") {
            guard let close = hostAndPort.firstIndex(of: "]") else { throw .invalid("unterminated IPv6 address") }
            host = hostAndPort[hostAndPort.startIndex...close]
            let rest = hostAndPort[hostAndPort.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { throw .invalid("unexpected text after the IPv6 address") }
                port = rest.dropFirst()
            }
        } else if let portColon = hostAndPort.lastIndex(of: ":") {
            host = hostAndPort[..<portColon]
            port = hostAndPort[hostAndPort.index(after: portColon)...]
        } else {
            host = hostAndPort
        }
        guard !host.isEmpty, host != "[]" else { throw .invalid("the URL has no host") }
        if let port, !port.isEmpty {
            guard port.allSatisfy({ $0.isASCII && $0.isNumber }), let number = Int(port), (1...65535).contains(number) else {
                throw .invalid("bad port '\(port)'")
            }
        }
        // A host with letters past ASCII is sent as its IDNA form (what libcurl takes, as curl does).
        if let ascii = Punycode.asciiHost(host) {
            // IDNA maps fullwidth `：／＃？＠` to their ASCII forms: a host must not gain URL syntax that
            // way (another port, path or user than the URL shows), so only a name's own bytes may come out.
            guard Punycode.isName(ascii) else {
                throw .invalid("the host becomes '\(Self.displayed(ascii))' in its international form, where URL syntax appears")
            }
            self.string = String(text[..<host.startIndex]) + ascii + String(text[host.endIndex...])
            self.host = ascii
        } else {
            self.string = text
            self.host = String(host)
        }
        self.scheme = scheme
    }

    /// The server it names, as requests are counted against (`--per-host`, `--rate`, giving up,
    /// `--stats`): its host name, lowercased, and its port when the URL names one (two servers on one
    /// machine are two).
    public var server: String {
        let host = self.host.lowercased()
        // Read as bytes (every download passes here): a parsed URL's port is ASCII digits.
        let port = string.utf8.withContiguousStorageIfAvailable(HostPoliteness.port(in:)) ?? nil
        return port.map { host + ":" + $0 } ?? host
    }

    /// `text` with any `user:password@` replaced by `***@`, for messages and logs.
    /// `redacted(text)` for a message line, control characters escaped
    /// (`ControlCharacters.escaped`), so that a hostile URL cannot break the
    /// line or send terminal sequences.
    public static func displayed(_ text: String) -> String {
        ControlCharacters.escaped(redacted(text))
    }

    /// `text` with the password of every URL in it (`scheme://user:password@`) shown as `***`,
    /// as a request path that carries a source URL is logged.
    /// An escaped `@` (`%40`, as a plain source in a path writes it) counts as one.
    public static func redactingPasswords(in text: String) -> String {
        guard text.containsUTF8(UInt8(ascii: "@")) || text.contains("%40") else { return text }
        var out = ""
        var rest = Substring(text)
        while let start = rest.firstRange(of: "://") {
            out += rest[..<start.upperBound]
            rest = rest[start.upperBound...]
            let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
            let authority = rest[..<authorityEnd]
            let at = authority.lastIndex(of: "@") ?? authority.ranges(of: "%40").last?.lowerBound
            if let at {
                let user = rest[..<at].split(separator: ":", maxSplits: 1).first.map(String.init) ?? ""
                out += user + ":***"
                rest = rest[at...]
            }
        }
        return out + rest
    }

    public static func redacted(_ text: String) -> String {
        // Most URLs carry no user information: one pass over the bytes says so.
        guard text.containsUTF8(UInt8(ascii: "@")), let start = text.firstRange(of: "://") else { return text }
        let authorityEnd = text[start.upperBound...].firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? text.endIndex
        guard let at = text[start.upperBound..<authorityEnd].lastIndex(of: "@") else { return text }
        return String(text[..<start.upperBound]) + "***" + String(text[at...])
    }
}
