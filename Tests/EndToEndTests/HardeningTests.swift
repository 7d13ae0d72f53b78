import Foundation
import ImgCacheCore
import Testing

/// The CLI and the cache under hostile input: secrets in every place a user
/// can put one, control characters, huge URLs, binary lists, loose permissions.
@Suite final class HardeningTests: FaultServerSuite {
    var namespace: String { cacheRoot + "/default" }

    /// Every cache file's bytes, metadata attributes included.
    func everythingStored() -> [String] {
        CacheInspection.files(under: cacheRoot).map { (try? String(contentsOfFile: cacheRoot + "/" + $0, encoding: .isoLatin1)) ?? "" }
            + CacheInspection.files(under: cacheRoot).compactMap { CacheInspection.metadata(ofImage: cacheRoot + "/" + $0) }
    }

    @Test func secretsInHeadersCredentialsAndURLsAppearNowhere() throws {
        let secrets = ["-H", "Authorization: Bearer s3cr3t-token", "-H", "Cookie: session=s3cr3t-cookie", "-u", "user:s3cr3t-pass"]
        let urls = [server.url("photo.jpg"), server.url("status/404"), "http://user:s3cr3t-url@127.0.0.1:\(faults.port)/image/logo.png",
                    "http://user:s3cr3t-url@127.0.0.1:\(faults.port)/status/404"]
        let list = home.appending("urls.txt")
        try urls.joined(separator: "\n").write(toFile: list, atomically: false, encoding: .utf8)
        var outputs: [String] = []
        for arguments in [["-v", "--json", "fetch"] + secrets + urls, ["-v", "fetch"] + secrets + urls,
                          ["-vv", "--json", "prefetch", "--retry-failed"] + secrets + [list], ["--json", "cache-info"]] {
            let result = try fetch(arguments)
            outputs += [result.output, result.standardError]
        }
        #expect(CacheInspection.failedRecords(inNamespace: namespace).count == 2)
        let everywhere = outputs + everythingStored()
        #expect(!everywhere.contains { $0.contains("s3cr3t") }, "a secret leaked")
        // The requests did carry them.
        #expect(faults.requests.contains { $0.header("Authorization") == "Bearer s3cr3t-token" })
    }

    /// Anyone who can list a team cache sees its names and records: nothing there can be checked
    /// against a guessed password offline, neither a URL's nor -u's.
    @Test func aPasswordInAURLCannotBeRecoveredFromTheCachesNamesOrRecords() throws {
        let base = "127.0.0.1:\(faults.port)"
        let url = "http://alice:S3cretPW@\(base)/image/logo.png", failing = "http://alice:S3cretPW@\(base)/status/404"
        #expect(try fetch(["fetch", url]).status == 0)
        #expect(try fetch(["fetch", failing]).status == 1)
        #expect(try fetch(["fetch", "-u", "bob:B0bPass", faults.baseURL + "/status/404?b"]).status == 1)
        // What a guess would be checked against: the names a plain MD5 of the URL would give, the passwords' digests.
        let guesses = [url, failing, "S3cretPW", "B0bPass", "alice:S3cretPW", "bob:B0bPass"].map { ImgCacheCore.MD5.hex($0) }
        let names = CacheInspection.files(under: cacheRoot)
        #expect(!names.contains { name in guesses.contains { name.contains($0) } }, "\(names)")
        let contents = everythingStored()
        #expect(!contents.contains { text in text.contains("S3cretPW") || text.contains("B0bPass") || guesses.contains { text.contains($0) } })
        // The secret the digests are made with is the user's alone.
        let secret = try #require(names.first { $0.hasPrefix("default/secret-") })
        let attributes = try FileManager.default.attributesOfItem(atPath: cacheRoot + "/" + secret)
        #expect(attributes[.posixPermissions] as? Int == 0o600)
        // It is kept: the same URL is a hit, another user's is an entry of its own, the failure is remembered for alice.
        #expect(try fetch(["--json", "fetch", url]).jsonLines().first?["cache"] as? String == "disk")
        #expect(try fetch(["--json", "fetch", "http://carol:pw@\(base)/image/logo.png"]).jsonLines().first?["cache"] as? String == "none")
        #expect(try fetch(["fetch", failing]).standardError.contains("failed"))
    }

    /// A file planted (or damaged) where the user's secret goes is not used, and not left to make
    /// every credentialed URL a miss run after run: it is replaced, and the run says so once.
    @Test(arguments: ["short", "open", "link", "fifo"])
    func aPlantedSecretIsReplacedAndSaid(kind: String) throws {
        let url = "http://alice:S3cretPW@127.0.0.1:\(faults.port)/image/logo.png"
        let path = namespace + "/secret-\(getuid())"
        #expect(try fetch(["fetch", server.url("photo.jpg")]).status == 0)
        switch kind {
        case "short": #expect(FileManager.default.createFile(atPath: path, contents: Data(repeating: 65, count: 10), attributes: [.posixPermissions: 0o600]))
        case "open": #expect(FileManager.default.createFile(atPath: path, contents: Data(repeating: 65, count: 32), attributes: [.posixPermissions: 0o644]))
        case "link": try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: home.appending("elsewhere"))
        default: #expect(mkfifo(path, 0o600) == 0)
        }
        let first = try fetch(["--json", "fetch", url, url])
        #expect(first.status == 0, "\(first.standardError)")
        let said = first.errorLines.filter { $0.contains("was not a secret of this user's") && $0.contains("replaced with a new one") }
        #expect(said.count == 1, "\(kind): \(first.standardError)")
        #expect(try first.jsonLines().map { $0["cache"] as? String } == ["none", "memory"])
        // The new secret keys the entry for later runs: a hit, and nothing more said.
        let second = try fetch(["--json", "fetch", url])
        #expect(try second.jsonLines().first?["cache"] as? String == "disk" && second.standardError.isEmpty, "\(kind): \(second.standardError)")
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect(attributes[.posixPermissions] as? Int == 0o600 && attributes[.size] as? Int == 32 && attributes[.type] as? FileAttributeType == .typeRegular)
    }

    @Test func controlCharactersInAURLAreShownEscaped() throws {
        let list = home.appending("hostile.txt")
        try "http://127.0.0.1/a\u{1B}[31mred\rb.png\nhttp://127.0.0.1/\u{7}bell.png\n".write(toFile: list, atomically: false, encoding: .utf8)
        let result = try fetch(["--json", "prefetch", list])
        #expect(result.status == 1)
        #expect(!result.standardError.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 || $0 == "\r" })
        #expect(result.standardError.contains("http://127.0.0.1/a\\x1B[31mred\\rb.png: invalid URL"), "\(result.standardError)")
        // JSON carries the URL as given, escaped by JSON itself.
        #expect(try result.jsonLines().filter { $0["error"] != nil }.count == 2)
    }

    @Test func an8KBURLIsStoredUnderAValidNameWithItsMetadata() throws {
        let url = faults.baseURL + "/image/logo.png?pad=" + String(repeating: "a", count: 8 * 1024)
        let first = try fetch(["--json", "fetch", url])
        #expect(first.status == 0, "\(first.standardError)")
        let path = try #require(try first.jsonLines().first?["path"] as? String)
        #expect((path as NSString).lastPathComponent.count <= 40)
        #expect(CacheInspection.problems(inNamespace: namespace) { _ in try? Paths.fixture("logo.png") }.isEmpty)
        let again = try fetch(["--json", "fetch", url])
        #expect(try again.jsonLines().first?["cache"] as? String == "disk")
        #expect(faults.requests.count == 1)
    }

    @Test func aBinaryListEndsWithErrorsAndStoresNothing() throws {
        // A megabyte of deterministic noise, a 100 KB line among it.
        var state: UInt64 = 0x2545_F491_4F6C_DD1D
        var bytes: [UInt8] = []
        for _ in 0..<(1 << 20) {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            bytes.append(UInt8(truncatingIfNeeded: state))
        }
        bytes += [0x0A] + Array(repeating: UInt8(ascii: "x"), count: 100_000) + [0x0A]
        let list = home.appending("noise.bin")
        try Data(bytes).write(to: URL(fileURLWithPath: list))
        let result = try fetch(["--json", "prefetch", list])
        #expect(result.status == 1)
        let summary = try #require(try result.jsonLines().last)
        #expect(summary["summary"] as? Bool == true && summary["downloaded"] as? Int == 0)
        #expect((summary["failed"] as? Int ?? 0) > 1000)
        #expect(result.standardError.contains("longer than 16 KiB"))
        #expect(!result.standardError.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" })
        #expect(CacheInspection.storedFiles(under: namespace).filter { !$0.hasPrefix("failed/") }.isEmpty)
        #expect(server.requests.isEmpty && faults.requests.isEmpty)
    }

    @Test func aCacheFolderOthersCanWriteIsWarnedAbout() throws {
        try FileManager.default.createDirectory(atPath: cacheRoot, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: cacheRoot)
        let open = try fetch(["fetch", server.url("logo.png")])
        #expect(open.status == 0)
        #expect(open.errorLines.contains("imgcache: warning: \(cacheRoot) is writable by every user, who could replace cached images; run chmod o-w on it"))
        // The sticky bit (as on /tmp) keeps others from replacing our files: no warning.
        try FileManager.default.setAttributes([.posixPermissions: 0o1777], ofItemAtPath: cacheRoot)
        #expect(try fetch(["fetch", server.url("logo.png")]).standardError.isEmpty)
    }
}
