/// An entry as a remote store keeps it: a short text header, a blank line,
/// then the image's exact bytes. Other tools can read it (Docs/FLEET.md):
///
///     imgcache-object 1
///     sha256 <64 hex digits of the bytes>
///     length <byte count>
///     content-type image/jpeg
///     url <the URL, user information hidden>
///     etag "…"                 (when the origin sent one)
///     last-modified <HTTP date> (idem)
///     stored <seconds since the epoch>
///     robots noai               (when the origin opted the image out of AI training)
///
/// Values have `%`, CR and LF percent-escaped. Credentials are never in it.
public struct RemoteObject: Equatable, Sendable {
    public let bytes: [UInt8]
    public let contentType: String?
    public let url: String
    public let etag: String?
    public let lastModified: String?
    public let storedAt: Double
    /// The origin sent X-Robots-Tag noai or noimageai: every machine's exports leave it out.
    public var optedOut = false

    static let magic = "imgcache-object 1"
    /// The largest object read or written: Redis's largest value, 512 MiB.
    public static let maximumLength = 512 << 20
    /// The longest header an object may have.
    static let maximumHeaderLength = 16 * 1024

    /// The longest object that can hold an image of at most `imageBytes` (nil: any size).
    public static func maximumLength(forImagesUpTo imageBytes: Int64?) -> Int {
        guard let imageBytes else { return maximumLength }
        return Int(min(Int64(maximumLength), max(0, imageBytes) + Int64(maximumHeaderLength)))
    }

    public init(bytes: [UInt8], contentType: String?, url: String, etag: String?, lastModified: String?, storedAt: Double) {
        self.bytes = bytes
        self.contentType = contentType
        self.url = RemoteURL.redacted(url)
        self.etag = etag
        self.lastModified = lastModified
        self.storedAt = storedAt
    }

    /// Why remote bytes are not taken.
    public enum Defect: Error, Equatable, Sendable, CustomStringConvertible {
        case noHeader, badHeader(String), wrongLength(expected: Int, found: Int), wrongDigest
        case digestUnavailable(String)

        public var description: String {
            switch self {
            case .noHeader: return "not an imgcache object"
            case .badHeader(let detail): return "bad object header: \(detail)"
            case .wrongLength(let expected, let found): return "object cut or padded: \(found) bytes, not \(expected)"
            case .wrongDigest: return "object bytes do not match their SHA-256"
            case .digestUnavailable(let reason): return "cannot check the object: \(reason)"
            }
        }
    }

    /// The object's bytes as stored.
    public func encoded() throws(Defect) -> [UInt8] {
        let digest: String
        do { digest = try SHA256.hex(bytes) } catch { throw .digestUnavailable(error.reason) }
        var lines = [RemoteObject.magic, "sha256 " + digest, "length \(bytes.count)"]
        func add(_ name: String, _ value: String?) {
            if let value { lines.append(name + " " + EntryMetadata.escape(value)) }
        }
        add("content-type", contentType)
        add("url", url)
        add("etag", etag)
        add("last-modified", lastModified)
        add("stored", String(storedAt))
        add("robots", optedOut ? "noai" : nil)
        return Array((lines.joined(separator: "\n") + "\n\n").utf8) + bytes
    }

    /// Reads an object, checking its length and SHA-256.
    public init(decoding data: [UInt8]) throws(Defect) {
        guard data.starts(with: Array((RemoteObject.magic + "\n").utf8)) else { throw .noHeader }
        // The header ends at the first empty line.
        var end: Int?
        for index in 0..<max(0, data.count - 1) where data[index] == 0x0A && data[index + 1] == 0x0A {
            end = index
            break
        }
        guard let end, end < RemoteObject.maximumHeaderLength else { throw .badHeader("no end of header") }
        var fields: [Substring: String] = [:]
        for line in String(decoding: data[..<end], as: UTF8.self).split(separator: "\n").dropFirst() {
            guard let space = line.firstIndex(of: " ") else { throw .badHeader("line without a value") }
            let value = EntryMetadata.unescape(line[line.index(after: space)...])
            // A value becomes a stored field and, for the validators, a request header: no control characters.
            guard !value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                throw .badHeader("control character in \(line[..<space])")
            }
            fields[line[..<space]] = value
        }
        guard let length = fields["length"].flatMap({ Int($0) }), let digest = fields["sha256"],
              let stored = fields["stored"].flatMap({ Double($0) }) else { throw .badHeader("missing length, sha256 or stored") }
        let bytes = Array(data[(end + 2)...])
        guard bytes.count == length else { throw .wrongLength(expected: length, found: bytes.count) }
        let actual: String
        do { actual = try SHA256.hex(bytes) } catch { throw .digestUnavailable(error.reason) }
        guard actual == digest else { throw .wrongDigest }
        self.init(bytes: bytes, contentType: fields["content-type"], url: fields["url"] ?? "", etag: fields["etag"],
                  lastModified: fields["last-modified"], storedAt: stored)
        optedOut = fields["robots"] == "noai"
    }
}

/// Where an entry lives in a remote store: by namespace and the MD5 of its
/// key, as locally (a transform's key included), in plain hex so that every
/// store takes it as it is.
public struct RemoteKey: Equatable, Hashable, Sendable {
    public let namespace: String
    public let digest: String

    /// `v1/<namespace>/<xx>/<md5>`, under a store's prefix.
    public var path: String { "v1/\(namespace)/\(digest.prefix(2))/\(digest)" }

    /// `imgcache:v1:<namespace>:<md5>` (Redis).
    public var redisKey: String { "imgcache:v1:\(namespace):\(digest)" }
}
