import Foundation
@testable import ImgCacheCore
import Testing

@Suite struct FailedURLClassificationTests {
    let url = "http://h/a.png"

    /// The credential key of namespace `unit` under `root`.
    static func credentialKey(_ root: String) throws -> CredentialKey {
        CredentialKey(cache: DiskCache(location: CacheLocation(root: root, namespace: try Namespace(validating: "unit"))))
    }

    @Test func lastingFailuresAreRemembered() {
        let remembered: [FetchError] = [
            .download(url: url, .unsupportedScheme("file")), .notAnImage(url: url, contentType: "text/html"), .unsupportedFormat(url: url, .tiff),
            .corruptImage(url: url, reason: "bad header"),
            .download(url: url, .httpStatus(404)), .download(url: url, .httpStatus(410)), .download(url: url, .httpStatus(403)),
            .download(url: url, .httpStatus(400)), .download(url: url, .tooLarge(limit: 10)),
        ]
        for error in remembered { #expect(error.isRemembered, "\(error)") }
    }

    @Test func transientAndLocalFailuresAreNot() {
        let forgotten: [FetchError] = [
            .download(url: url, .dns("x")), .download(url: url, .connectionRefused), .download(url: url, .connectionReset),
            .download(url: url, .connectionLost("x")), .download(url: url, .timeout(seconds: 1)),
            .download(url: url, .tlsHandshake("x")), .download(url: url, .httpStatus(500)), .download(url: url, .httpStatus(503)),
            .download(url: url, .httpStatus(408)), .download(url: url, .httpStatus(429)), .download(url: url, .cancelled),
            .download(url: url, .tlsCertificate("x")), .download(url: url, .tooManyRedirects(limit: 2)),
            .interrupted(url: url), .notCached(url: url), .libraryMissing("x"),
            .tooManyPixels(url: url, width: 50_000, height: 50_000, limit: .standard), .notUsable(url: url, reason: "x"),
            .cacheUnwritable(SystemError("write", errno: .noSpace)),
        ]
        for error in forgotten { #expect(!error.isRemembered, "\(error)") }
    }

    @Test func aStringThatIsNoURLIsNotRememberedForNoRequestWasMade() {
        for error: FetchError in [.invalidURL(url: "x", reason: "no scheme"), .unsupportedScheme(url: "ftp://h/a", scheme: "ftp")] {
            #expect(error.rememberedScope(request: .plain) == nil, "\(error)")
        }
    }

    @Test func failuresThatDependOnTheRequestAnswerOnlyRequestsLikeIt() throws {
        var settings = FetchSettings()
        settings.headers = [try HTTPHeader(parsing: "Cookie: session=1")]
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("imgcache-key-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let withCookie = RequestFingerprint(settings: settings, downloads: DownloadConfiguration(),
                                            key: try Self.credentialKey(folder))
        #expect(withCookie != .plain)
        for code in [401, 403, 404, 407, 410] {
            let error = FetchError.download(url: url, .httpStatus(code))
            let scope = try #require(error.rememberedScope(request: .plain))
            #expect(scope.covers(.plain, sizeLimit: nil))
            // With credentials, headers or cookies, the answer may be another.
            #expect(!scope.covers(withCookie, sizeLimit: nil))
        }
        let page = try #require(FetchError.notAnImage(url: url, contentType: "text/html").rememberedScope(request: withCookie))
        #expect(page.covers(withCookie, sizeLimit: nil) && !page.covers(.plain, sizeLimit: nil))
        let tooLarge = FetchError.download(url: url, .tooLarge(limit: 1000)).rememberedScope(request: .plain)
        #expect(tooLarge == FailedURLStore.Scope(request: .plain, sizeLimitUpTo: 1000))
        #expect(tooLarge?.covers(.plain, sizeLimit: 1000) == true)
        #expect(tooLarge?.covers(.plain, sizeLimit: 500) == true)
        #expect(tooLarge?.covers(.plain, sizeLimit: 2000) == false)
        #expect(tooLarge?.covers(.plain, sizeLimit: nil) == false)
        #expect(tooLarge?.covers(withCookie, sizeLimit: 500) == false)
    }

    @Test func credentialsAreDigestedUnderAPerUserSecretNobodyElseCanRead() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("imgcache-key-\(UUID().uuidString)").path
        let elsewhere = folder + "-other"
        defer { for path in [folder, elsewhere] { try? FileManager.default.removeItem(atPath: path) } }
        var settings = FetchSettings()
        settings.credentials = Credentials(user: "alice", password: "S3cretPW")
        let here = RequestFingerprint(settings: settings, downloads: DownloadConfiguration(), key: try Self.credentialKey(folder))
        // The same credentials under the same (saved) secret make the same fingerprint in a later run.
        #expect(RequestFingerprint(settings: settings, downloads: DownloadConfiguration(), key: try Self.credentialKey(folder)) == here)
        // Under another namespace's secret, another: the digest depends on a secret, not only on the password.
        #expect(RequestFingerprint(settings: settings, downloads: DownloadConfiguration(), key: try Self.credentialKey(elsewhere)) != here)
        let secret = folder + "/unit/" + CredentialKey.fileName
        let attributes = try FileManager.default.attributesOfItem(atPath: secret)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect(try Data(contentsOf: URL(fileURLWithPath: secret)).count == 32)
        // A URL's own credentials make a fingerprint of their own.
        let key = try Self.credentialKey(folder)
        #expect(RequestFingerprint.plain.forURL("http://alice:S3cretPW@h/a.png", key: key) != .plain)
        #expect(RequestFingerprint.plain.forURL("http://h/a.png", key: key) == .plain)
        #expect(RequestFingerprint.plain.forURL("http://alice:S3cretPW@h/a.png", key: key)
                != RequestFingerprint.plain.forURL("http://alice:other@h/a.png", key: key))
    }

    @Test func aURLsUserInformationEntersItsKeyOnlyAsADigestUnderTheSecret() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("imgcache-key-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        #expect(URLText.normalized("http://alice:S3cretPW@Host:80/a.png") == "http://host/a.png")
        #expect(URLText.userInfo(of: "https://alice:pw@host/a@b.png") == "alice:pw")
        #expect(URLText.userInfo(of: "https://host/a@b.png") == nil)
        var settings = FetchSettings()
        settings.credentialKey = try Self.credentialKey(folder)
        let alice = settings.cacheKey(for: "http://alice:S3cretPW@Host/a.png"), bob = settings.cacheKey(for: "http://bob:pw@host/a.png")
        // Each user's entry stays apart from the others' and from the plain URL's...
        #expect(Set([alice.digest, bob.digest, settings.cacheKey(for: "http://host/a.png").digest]).count == 3)
        #expect(alice == settings.cacheKey(for: "http://alice:S3cretPW@host/a.png"))
        // ...and neither the password nor an unkeyed digest of it is in the key.
        #expect(!alice.string.contains("S3cretPW") && !alice.string.contains(MD5.hex("alice:S3cretPW")))
        #expect(alice.string.hasPrefix("http://~") && alice.string.hasSuffix("@host/a.png"))
        #expect(alice.storedForm == "http://***@host/a.png")
    }

    @Test func theFailedListKeepsOneRecordPerRequestAndASuccessForgetsThemAll() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("imgcache-failed-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = FailedURLStore(namespaceDirectory: folder)
        let key = CacheKey("http://h/a.png")
        let other = RequestFingerprint(settings: { var s = FetchSettings(); s.credentials = Credentials(user: "u", password: "p"); return s }(),
                                       downloads: DownloadConfiguration(), key: try Self.credentialKey(folder))
        try store.record(key, url: key.string, reason: "HTTP 403 Forbidden", scope: .init(request: .plain), now: 100)
        try store.record(key, url: key.string, reason: "HTTP 401 Unauthorized", scope: .init(request: other), now: 200)
        let records = try #require(store.lookup(key, ttl: .never, now: 300))
        #expect(records.map(\.reason) == ["HTTP 403 Forbidden", "HTTP 401 Unauthorized"])
        #expect(records.map(\.failedAt) == [100, 200])
        #expect(records.allSatisfy { $0.url == "http://h/a.png" })
        // Each expires on its own time; the file lives as long as the latest.
        #expect(store.lookup(key, ttl: .seconds(150), now: 300)?.map(\.reason) == ["HTTP 401 Unauthorized"])
        #expect(try store.count(ttl: .never, now: 300) == (1, 0))
        store.remove(key)
        #expect(store.lookup(key, ttl: .never, now: 300) == nil)
    }

    @Test func aRecordOfTheFirstVersionAnswersPlainRequests() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("imgcache-failed-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = FailedURLStore(namespaceDirectory: folder)
        let key = CacheKey("http://h/a.png")
        try FileManager.default.createDirectory(atPath: store.directory, withIntermediateDirectories: true)
        try "imgcache-failed 1\nurl http://h/a.png\nreason HTTP 404 Not Found\n".write(toFile: store.directory + "/" + key.digest,
                                                                                   atomically: false, encoding: .utf8)
        let record = try #require(store.lookup(key, ttl: .never, now: 0)?.first)
        #expect(record.reason == "HTTP 404 Not Found" && record.scope == .init(request: .plain))
    }

    @Test func aBlacklistedFailureSaysWhenAndNamesRetryFailed() {
        let now = 1_000_000.0
        let error = FetchError.blacklisted(url: url, reason: "HTTP 404 Not Found", failedAt: now - 3 * 3600,
                                           ttl: .seconds(86_400), now: now)
        #expect(error.message == "http://h/a.png: failed 3 hours ago (HTTP 404 Not Found); not tried again for 21 hours")
        let never = FetchError.blacklisted(url: url, reason: "r", failedAt: now, ttl: .never, now: now)
        #expect(never.message.contains("not tried again until the failed list is cleared"))
    }
}
