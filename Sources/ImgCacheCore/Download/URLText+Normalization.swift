#if canImport(Glibc)
import Glibc
#endif

extension URLText {
    /// The form of an http or https URL that its equivalents share (RFC 3986
    /// §6.2.2 and §6.2.3), so that they share one cache entry: scheme and host
    /// in lower case, the scheme's default port dropped, an empty path as `/`,
    /// `.` and `..` segments resolved (as libcurl does before sending),
    /// percent-encoded unreserved characters decoded and other escapes in
    /// upper case, bytes past ASCII in the path and query percent-encoded (a
    /// raw UTF-8 URL is the same request as its encoded form).
    /// `HTTP://Host:80/im%67/./café.png` is `http://host/img/caf%C3%A9.png`; a host with
    /// letters past ASCII is in its IDNA form (`bücher.example` is `xn--bcher-kva.example`), an IPv6
    /// address in its canonical text (`[0:0::1]` is `[::1]`).
    /// User information (`user:password@`) is left out: what names an entry
    /// in the cache must never hold a password in a form a guess could check
    /// (`CredentialKey.keyed` puts a keyed digest of it back).
    /// Anything else (another scheme, no authority) is returned as it is.
    public static func normalized(_ url: String) -> String {
        // Most URLs are normal already, and every lookup keys one: that is decided over the
        // bytes where they are, and only a URL that is not is copied and rebuilt.
        var text = url
        let alreadyNormal = text.withUTF8 { bytes -> Bool in
            guard let schemeEnd = schemeEnd(bytes), isHTTP(bytes, schemeEnd: schemeEnd) else { return true }
            let authorityStart = schemeEnd + 3
            var authorityEnd = authorityStart
            while authorityEnd < bytes.count, !endsAuthority(bytes[authorityEnd]) { authorityEnd += 1 }
            return isNormal(bytes, scheme: schemeEnd, authority: authorityStart..<authorityEnd)
        }
        return alreadyNormal ? url : rebuilt(url)
    }

    /// `normalized` of a URL that is not normal already (or not http at all); of any URL, the
    /// same answer (the tests hold the shortcut to it).
    package static func rebuilt(_ url: String) -> String {
        var utf8 = Array(url.utf8)
        guard let schemeEnd = utf8.withUnsafeBufferPointer(schemeEnd) else { return url }
        let scheme = String(decoding: utf8[..<schemeEnd], as: UTF8.self).lowercased()
        guard scheme == "http" || scheme == "https" else { return url }
        let authorityStart = schemeEnd + 3
        var authorityEnd = authorityStart
        while authorityEnd < utf8.count, !endsAuthority(utf8[authorityEnd]) { authorityEnd += 1 }

        var result = Array(scheme.utf8) + Array("://".utf8)
        // Userinfo is left out; the host is put in lower case.
        let authority = utf8[authorityStart..<authorityEnd]
        let at = authority.lastIndex(of: UInt8(ascii: "@"))
        let hostAndPort = Array(utf8[(at.map { $0 + 1 } ?? authorityStart)..<authorityEnd])
        var host = hostAndPort[...], port: ArraySlice<UInt8> = []
        // The port follows the last colon, unless it is inside an IPv6 literal's brackets.
        if let colon = hostAndPort.lastIndex(of: UInt8(ascii: ":")), !hostAndPort[colon...].contains(UInt8(ascii: "]")) {
            host = hostAndPort[..<colon]
            port = hostAndPort[(colon + 1)...]
        }
        // A host with letters past ASCII as it is sent, in its IDNA form; an IPv6 address in its
        // canonical text (RFC 5952: `[0:0::1]` is `[::1]`).
        // (A form that gains URL syntax, `：` become `:`, is no name: the URL is refused, its key kept apart.)
        if let ascii = Punycode.asciiHost(String(decoding: percentNormalized(host), as: UTF8.self)), Punycode.isName(ascii) {
            result += Array(ascii.utf8)
        } else if host.first == UInt8(ascii: "["), host.last == UInt8(ascii: "]"),
                  let canonical = canonicalIPv6(String(decoding: host.dropFirst().dropLast(), as: UTF8.self)) {
            result += Array(("[" + canonical + "]").utf8)
        } else {
            result += percentNormalized(host).map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }
        }
        let defaultPort = scheme == "http" ? "80" : "443"
        if !port.isEmpty, !port.elementsEqual(defaultPort.utf8) {
            result.append(UInt8(ascii: ":"))
            result += port
        }
        utf8.removeSubrange(..<authorityEnd)
        let queryStart = utf8.firstIndex(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) ?? utf8.count
        var path = percentNormalized(utf8[..<queryStart], encodingNonASCII: true)
        if path.isEmpty { path = [UInt8(ascii: "/")] }
        result += withoutDotSegments(path)
        result += percentNormalized(utf8[queryStart...], encodingNonASCII: true)
        return String(decoding: result, as: UTF8.self)
    }

    /// `text`'s IPv6 address as RFC 5952 writes it (lower case, the longest run of zeros as `::`);
    /// nil when it is not one.
    static func canonicalIPv6(_ text: String) -> String? {
        var address = in6_addr()
        guard inet_pton(AF_INET6, text, &address) == 1 else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count)) != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The user information of an http or https URL (`user:password` of
    /// `https://user:password@host/`), nil when it has none.
    public static func userInfo(of url: String) -> String? {
        guard url.containsUTF8(UInt8(ascii: "@")) else { return nil }
        let utf8 = Array(url.utf8)
        guard let schemeEnd = utf8.withUnsafeBufferPointer(schemeEnd) else { return nil }
        var end = schemeEnd + 3
        while end < utf8.count, !endsAuthority(utf8[end]) { end += 1 }
        guard let at = utf8[(schemeEnd + 3)..<end].lastIndex(of: UInt8(ascii: "@")) else { return nil }
        return String(decoding: utf8[(schemeEnd + 3)..<at], as: UTF8.self)
    }

    /// `url` (with an authority) with `information` as its user information, before its host.
    static func withUserInfo(_ url: String, _ information: String) -> String {
        guard let separator = url.firstRange(of: "://") else { return url }
        return String(url[..<separator.upperBound]) + information + "@" + String(url[separator.upperBound...])
    }

    /// The index of `:` in a leading `scheme://`, if there is one.
    private static func schemeEnd(_ utf8: UnsafeBufferPointer<UInt8>) -> Int? {
        var index = 0
        while index < utf8.count, index < 16 {
            let byte = utf8[index]
            if byte == UInt8(ascii: ":") {
                guard index > 0, index + 2 < utf8.count, utf8[index + 1] == UInt8(ascii: "/"), utf8[index + 2] == UInt8(ascii: "/") else { return nil }
                return index
            }
            guard (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == UInt8(ascii: "+")
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || (index > 0 && (0x30...0x39).contains(byte)) else { return nil }
            index += 1
        }
        return nil
    }

    /// Whether the scheme ending at `schemeEnd` is http or https, in any case.
    private static func isHTTP(_ utf8: UnsafeBufferPointer<UInt8>, schemeEnd: Int) -> Bool {
        guard schemeEnd == 4 || schemeEnd == 5 else { return false }
        return utf8[0] | 0x20 == UInt8(ascii: "h") && utf8[1] | 0x20 == UInt8(ascii: "t") && utf8[2] | 0x20 == UInt8(ascii: "t")
            && utf8[3] | 0x20 == UInt8(ascii: "p") && (schemeEnd == 4 || utf8[4] | 0x20 == UInt8(ascii: "s"))
    }

    /// Whether `byte` ends a URL's authority (`/`, `?` or `#`).
    private static func endsAuthority(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#")
    }

    /// Whether the URL is normal already (most are): no upper case in scheme
    /// or host, no port but one of digits that is not the scheme's default, a
    /// path, no `%` and no dot segment anywhere. One pass, no allocation.
    private static func isNormal(_ utf8: UnsafeBufferPointer<UInt8>, scheme: Int, authority: Range<Int>) -> Bool {
        for index in 0..<scheme where (0x41...0x5A).contains(utf8[index]) { return false }
        var portStart: Int?
        for index in authority {
            let byte = utf8[index]
            if (0x41...0x5A).contains(byte) || byte == UInt8(ascii: "%") || byte == UInt8(ascii: "@") || byte >= 0x80 { return false }
            // An IPv6 address may be written in several ways: rebuilt to its one canonical text.
            if byte == UInt8(ascii: "[") { return false }
            if byte == UInt8(ascii: ":") {
                guard portStart == nil else { return false }
                portStart = index + 1
            }
        }
        if let portStart {
            // Digits only, and not the default port, which the normal form drops.
            let port = UnsafeBufferPointer(rebasing: utf8[portStart..<authority.upperBound])
            guard !port.isEmpty, port.allSatisfy({ (0x30...0x39).contains($0) }) else { return false }
            let defaultPort = scheme == 4 ? "80" : "443"
            if port.elementsEqual(defaultPort.utf8) { return false }
        }
        guard authority.upperBound < utf8.count, utf8[authority.upperBound] == UInt8(ascii: "/") else { return false }
        var previous = UInt8(ascii: "/")
        var inPath = true
        for index in authority.upperBound..<utf8.count {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%") || byte >= 0x80 { return false }
            if byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") { inPath = false }
            if inPath, byte == UInt8(ascii: "."), previous == UInt8(ascii: "/") {
                // "/." begins a dot segment only if "." or ".." is the whole segment.
                var end = index
                while end < utf8.count, utf8[end] == UInt8(ascii: ".") { end += 1 }
                if end - index <= 2, end == utf8.count || endsAuthority(utf8[end]) { return false }
            }
            previous = byte
        }
        return true
    }

    /// Percent escapes of unreserved characters decoded, the others' hex digits in upper case;
    /// with `encodingNonASCII`, bytes past ASCII escaped as well.
    private static func percentNormalized(_ bytes: ArraySlice<UInt8>, encodingNonASCII: Bool = false) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if encodingNonASCII, byte >= 0x80 {
                out += [UInt8(ascii: "%"), upperHex(byte >> 4), upperHex(byte & 0x0F)]
                index += 1
                continue
            }
            guard byte == UInt8(ascii: "%"), index + 2 < bytes.endIndex,
                  let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) else {
                out.append(byte)
                index += 1
                continue
            }
            let decoded = high << 4 | low
            if isUnreserved(decoded) {
                out.append(decoded)
            } else {
                out += [UInt8(ascii: "%"), upperHex(high), upperHex(low)]
            }
            index += 3
        }
        return out
    }

    /// RFC 3986 §5.2.4: `.` segments dropped, `..` taking the segment before with it.
    private static func withoutDotSegments(_ path: [UInt8]) -> [UInt8] {
        let segments = path.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).dropFirst()
        guard segments.contains(where: { $0.elementsEqual(".".utf8) || $0.elementsEqual("..".utf8) }) else { return path }
        var kept: [ArraySlice<UInt8>] = []
        for (position, segment) in segments.enumerated() {
            let last = position == segments.count - 1
            if segment.elementsEqual(".".utf8) {
                if last { kept.append([]) }
            } else if segment.elementsEqual("..".utf8) {
                if !kept.isEmpty { kept.removeLast() }
                if last { kept.append([]) }
            } else {
                kept.append(segment)
            }
        }
        return kept.reduce(into: [UInt8]()) { $0.append(UInt8(ascii: "/")); $0 += $1 }.ifEmpty([UInt8(ascii: "/")])
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte)
            || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
    }

    /// The first `limit` bytes of `bytes` with every `%XX` escape decoded (a `%` not followed by
    /// two hex digits stays as it is).
    public static func percentDecoded(_ bytes: ArraySlice<UInt8>, limit: Int = .max) -> [UInt8] {
        var decoded: [UInt8] = []
        var rest = bytes.prefix(limit)
        while let byte = rest.popFirst() {
            if byte == UInt8(ascii: "%"), rest.count >= 2, let high = hexValue(rest[rest.startIndex]),
               let low = hexValue(rest[rest.startIndex + 1]) {
                decoded.append(high << 4 | low)
                rest = rest.dropFirst(2)
            } else {
                decoded.append(byte)
            }
        }
        return decoded
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: return byte - 0x30
        case 0x41...0x46: return byte - 0x41 + 10
        case 0x61...0x66: return byte - 0x61 + 10
        default: return nil
        }
    }

    private static func upperHex(_ value: UInt8) -> UInt8 {
        value < 10 ? 0x30 + value : 0x41 + value - 10
    }
}

private extension Array {
    func ifEmpty(_ replacement: Self) -> Self { isEmpty ? replacement : self }
}
