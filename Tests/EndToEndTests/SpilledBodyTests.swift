import Foundation
import Testing

/// Bodies too large to keep in memory go to a file as they arrive; they are
/// checked from their head and tail where the format allows, and must be
/// refused or stored exactly as a body in memory would be.
@Suite(.serialized) final class SpilledBodyTests {
    let home: TemporaryDirectory
    let served: TemporaryDirectory
    let cacheRoot: String

    init() throws {
        home = try TemporaryDirectory()
        served = try TemporaryDirectory("imgcache-served")
        cacheRoot = home.appending("cache")
    }

    func fetch(_ arguments: [String]) throws -> RunResult {
        try ImgCacheProcess.run(["--cache-dir", cacheRoot] + arguments, home: home.path)
    }

    /// Over 8 MiB, the most a single transfer keeps in memory.
    static let padding = 9 << 20

    /// photo.jpg with its scan data padded before its end-of-image marker: a JPEG
    /// of over 9 MiB whose header and end are where a large photo's are (its
    /// decoder would warn of the padding; the header check lets it through).
    static func largeJPEG() throws -> [UInt8] {
        let photo = [UInt8](try Paths.fixture("photo.jpg"))
        return Array(photo.dropLast(2)) + [UInt8](repeating: 0, count: padding) + [0xFF, 0xD9]
    }

    /// logo.png with a private ancillary chunk before its IEND: a whole PNG of over 9 MiB.
    static func largePNG() throws -> [UInt8] {
        let logo = [UInt8](try Paths.fixture("logo.png"))
        let data = [UInt8](repeating: 0x41, count: padding)
        let typeAndData = Array("prIv".utf8) + data
        let chunk = bigEndian(UInt32(data.count)) + typeAndData + bigEndian(crc32(typeAndData))
        return Array(logo.dropLast(12)) + chunk + Array(logo.suffix(12))
    }

    /// alpha.webp with an unknown chunk after its image, its RIFF size counting it: a whole WebP of over 9 MiB.
    static func largeWebP() throws -> [UInt8] {
        var webp = [UInt8](try Paths.fixture("alpha.webp"))
        webp += Array("JUNK".utf8) + littleEndian(UInt32(padding)) + [UInt8](repeating: 0, count: padding)
        let riff = littleEndian(UInt32(webp.count - 8))
        webp.replaceSubrange(4..<8, with: riff)
        return webp
    }

    func serve(_ name: String, _ bytes: [UInt8]) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: served.appending(name)))
    }

    @Test(arguments: ["large.jpg", "large.png", "large.webp"])
    func aWholeLargeImageIsStoredByteForByte(name: String) throws {
        let bytes = switch name {
        case "large.jpg": try Self.largeJPEG()
        case "large.png": try Self.largePNG()
        default: try Self.largeWebP()
        }
        try serve(name, bytes)
        let nginx = try NginxServer(serving: served.url)
        let result = try fetch(["fetch", nginx.url(name)])
        #expect(result.status == 0, "\(result.standardError)")
        let path = try #require(result.lines.first)
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))) == bytes)
    }

    @Test func aLargeImageCheckedFromItsEndsIsSharedWholeThroughARemoteStore() throws {
        let bytes = try Self.largePNG()
        try serve("large.png", bytes)
        let nginx = try NginxServer(serving: served.url)
        let redis = try RedisServer()
        let first = try ImgCacheProcess.run(["--cache-dir", home.appending("a"), "--json", "fetch", "--remote", redis.url,
                                             nginx.url("large.png")], home: home.path)
        #expect(first.status == 0, "\(first.standardError)")
        #expect(try redis.keys().count == 1)
        let second = try ImgCacheProcess.run(["--cache-dir", home.appending("b"), "--json", "fetch", "--remote", redis.url,
                                              nginx.url("large.png")], home: home.path)
        let answer = try #require(try second.jsonLines().first)
        #expect(answer["cache"] as? String == "remote", "\(second.standardError)")
        let path = try #require(answer["path"] as? String)
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))) == bytes)
        #expect(nginx.requestCount("large.png") == 1)
    }

    @Test(arguments: [
        // The end of the scan data, the IEND chunk, the end of an unknown chunk.
        ("cut.jpg", 100, "truncated JPEG image: the file ends before its end-of-image marker"),
        ("cut.png", 12, "truncated PNG image: the file ends before its IEND chunk"),
        ("cut.webp", 4096, "truncated WebP image: the file is "),
    ])
    func aLargeImageCutShortIsRefusedAndNothingIsStored(name: String, missing: Int, reason: String) throws {
        let whole = switch name {
        case "cut.jpg": try Self.largeJPEG()
        case "cut.png": try Self.largePNG()
        default: try Self.largeWebP()
        }
        // A server that sends fewer bytes than the image has, with a length that agrees.
        try serve(name, Array(whole.dropLast(missing)))
        let nginx = try NginxServer(serving: served.url)
        let result = try fetch(["fetch", nginx.url(name)])
        #expect(result.status == 1, "\(result.standardError)")
        #expect(result.standardError.contains("\(nginx.url(name)): \(reason)"), "\(result.standardError)")
        #expect(CacheInspection.storedFiles(under: cacheRoot + "/default").isEmpty)
    }
}

private func bigEndian(_ value: UInt32) -> [UInt8] {
    [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
}

private func littleEndian(_ value: UInt32) -> [UInt8] { bigEndian(value).reversed() }

/// PNG's chunk checksum (ISO 3309 CRC-32), a byte at a time.
private func crc32(_ bytes: [UInt8]) -> UInt32 {
    let table = (0..<256).map { index -> UInt32 in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? (value >> 1) ^ 0xEDB8_8320 : value >> 1 }
        return value
    }
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
    return ~crc
}
