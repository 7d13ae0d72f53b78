import ImgCacheCore

/// A request path in imgproxy's format, taken apart:
/// `/SIGNATURE/OPTION/OPTION/plain/SOURCE@EXT` or `/SIGNATURE/OPTION/BASE64URL.EXT`
/// (the encoded source may be split by slashes). Pages and URL builders written
/// for imgproxy address `serve` unchanged.
public struct ImgproxyPath: Equatable, Sendable {
    /// The first segment, as written.
    public let signature: String
    /// What the signature signs: the path from the slash after the signature on, as sent.
    public let signedPart: String
    /// The processing options, in order: each one's name and its colon-separated arguments.
    public let options: [Option]
    /// The source image's URL, decoded.
    public let source: String
    /// The extension asked for (`@png`, `.webp`), lower case; nil: none.
    public let fileExtension: String?

    /// One processing option: `rs:fill:300:200` is `rs` with `["fill", "300", "200"]`.
    public struct Option: Equatable, Sendable {
        public let name: String
        public let arguments: [String]

        public init(name: String, arguments: [String]) {
            self.name = name
            self.arguments = arguments
        }
    }

    /// Why a path is not one.
    public struct Problem: Error, Equatable, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// Reads `path` (the request target without its query). A query string is part of a plain
    /// source only when escaped, as imgproxy reads it.
    public init(parsing path: String) throws(Problem) {
        guard path.utf8.first == UInt8(ascii: "/") else { throw Problem(description: "the path does not start with /") }
        let afterSlash = path.utf8.dropFirst()
        guard let end = afterSlash.firstIndex(of: UInt8(ascii: "/")) else {
            throw Problem(description: "no processing options or source after the signature")
        }
        signature = String(decoding: afterSlash[..<end], as: UTF8.self)
        signedPart = String(decoding: path.utf8[end...], as: UTF8.self)
        var segments = signedPart.utf8.dropFirst().split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
            .map { String(decoding: $0, as: UTF8.self) }
        var options: [Option] = []
        // Options until `plain` or the first segment without a colon (base64url has none).
        while let first = segments.first, first != "plain", first.contains(":") {
            segments.removeFirst()
            let parts = first.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            options.append(Option(name: parts[0], arguments: Array(parts.dropFirst())))
        }
        self.options = options
        guard let first = segments.first, !first.isEmpty else { throw Problem(description: "no source URL") }
        if first == "plain" {
            var plain = segments.dropFirst().joined(separator: "/")
            var fileExtension: String?
            if let at = plain.lastIndex(of: "@") {
                fileExtension = String(plain[plain.index(after: at)...]).lowercased()
                plain = String(plain[..<at])
            }
            guard let source = ImgproxyPath.percentDecoded(plain), !source.isEmpty else {
                throw Problem(description: "the plain source URL is not percent-encoded UTF-8")
            }
            self.source = source
            self.fileExtension = fileExtension?.isEmpty == true ? nil : fileExtension
        } else {
            var encoded = segments.joined()
            var fileExtension: String?
            if let dot = encoded.lastIndex(of: ".") {
                fileExtension = String(encoded[encoded.index(after: dot)...]).lowercased()
                encoded = String(encoded[..<dot])
            }
            guard let bytes = Base64.urlDecoded(encoded), !bytes.isEmpty, let source = String(validating: bytes, as: UTF8.self) else {
                throw Problem(description: "the source is neither plain/URL nor a URL in URL-safe base64")
            }
            self.source = source
            self.fileExtension = fileExtension?.isEmpty == true ? nil : fileExtension
        }
    }

    /// `text` with its %XX escapes decoded; nil when an escape is malformed or the result is not UTF-8.
    public static func percentDecoded(_ text: String) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = hexValue(iterator.next()), let low = hexValue(iterator.next()) else { return nil }
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
