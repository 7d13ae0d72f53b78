import Foundation
import Testing

/// `fetch`'s download options, as a user runs them: the binary against nginx
/// and the fault server on loopback.
@Suite final class FetchDownloadTests: FaultServerSuite {
    /// Every file under the cache root, and nothing left in a temporary folder.
    func expectNoTemporaryFiles(sourceLocation: SourceLocation = #_sourceLocation) {
        let temporary = CacheInspection.files(under: cacheRoot).filter { $0.split(separator: "/").last?.hasPrefix("tmp.") == true }
        #expect(temporary.isEmpty, "\(temporary)", sourceLocation: sourceLocation)
    }

    @Test func missesDownloadConcurrentlyUpToTheLimit() throws {
        let urls = (0..<6).map { faults.baseURL + "/gate/2/logo.png?n=\($0)" }
        let result = try fetch(["fetch", "-j", "2"] + urls)
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.lines.count == 6)
        #expect(faults.maxInFlight == 2)
    }

    @Test func theSameURLTenTimesIsDownloadedOnceAndPrintedTenTimes() throws {
        let url = server.url("photo.jpg")
        let result = try fetch(["fetch"] + Array(repeating: url, count: 10))
        #expect(result.status == 0)
        #expect(result.lines.count == 10 && Set(result.lines).count == 1)
        #expect(server.requestCount("photo.jpg") == 1)
    }

    @Test func resultsAreInTheOrderOfTheURLsWhateverFinishesFirst() throws {
        // LIFO with one slot downloads the last URL first; the output still follows the input.
        let names = ["photo.jpg", "logo.png", "anim.gif"]
        let result = try fetch(["--json", "fetch", "-j", "1", "--order", "lifo"] + names.map { server.url($0) })
        #expect(try result.jsonLines().map { $0["url"] as? String } == names.map { server.url($0) })
        #expect(server.requests.map(\.uri) == names.reversed().map { "/" + $0 })
    }

    @Test func credentialsWorkAndAreNeverShown() throws {
        let url = faults.baseURL + "/need-auth/logo.png"
        let good = try fetch(["-v", "--json", "fetch", "-u", "user:secret", url])
        #expect(good.status == 0, "\(good.standardError)")
        let bad = try fetch(["-v", "fetch", "-u", "user:wrong-secret", url + "?again"])
        #expect(bad.status == 1)
        #expect(bad.standardError.contains("HTTP 401 Unauthorized"))
        let inURL = try fetch(["-v", "--json", "fetch", "http://user:secret@127.0.0.1:\(faults.port)/need-auth/logo.png?userinfo"])
        #expect(inURL.status == 0, "\(inURL.standardError)")
        #expect(inURL.output.contains("http://***@127.0.0.1"))
        let everything = [good.output, good.standardError, bad.output, bad.standardError, inURL.output, inURL.standardError]
            + CacheInspection.files(under: cacheRoot).map { (try? String(contentsOfFile: cacheRoot + "/" + $0, encoding: .isoLatin1)) ?? "" }
            + CacheInspection.files(under: cacheRoot).compactMap { CacheInspection.metadata(ofImage: cacheRoot + "/" + $0) }
        #expect(everything.contains { $0.contains("\nkey http://***@127.0.0.1") })
        #expect(!everything.contains { $0.contains("secret") })
    }

    @Test func headersAreSentAndALineBreakIsAUsageError() throws {
        let result = try fetch(["fetch", "-H", "X-Project: demo", "-H", "Accept: image/png", faults.baseURL + "/image/logo.png"])
        #expect(result.status == 0)
        let request = try #require(faults.requests.first)
        #expect(request.header("X-Project") == "demo")
        #expect(request.header("Accept") == "image/png")
        #expect(request.header("User-Agent") == "imgcache/0.1.0")

        let refused = try fetch(["fetch", "-H", "X-A: 1\r\nX-Injected: 2", faults.baseURL + "/image/logo.png?no"])
        #expect(refused.status == 64)
        #expect(refused.errorLines.first == "imgcache: error: invalid value 'X-A: 1\\r\\nX-Injected: 2' for --header: the value contains a line break or NUL")
        #expect(faults.requests.count == 1)
    }

    @Test func cookiesPersistInTheJarBetweenRuns() throws {
        let jar = home.appending("jar.txt")
        #expect(try fetch(["fetch", "--cookies", jar, faults.baseURL + "/set-cookie/logo.png"]).status == 0)
        let withJar = try fetch(["fetch", "--cookies", jar, faults.baseURL + "/need-cookie/logo.png"])
        #expect(withJar.status == 0, "\(withJar.standardError)")
        let withoutJar = try fetch(["fetch", faults.baseURL + "/need-cookie/logo.png?again"])
        #expect(withoutJar.status == 1 && withoutJar.standardError.contains("HTTP 403 Forbidden"))
    }

    @Test func proxiesComeFromTheEnvironment() throws {
        // Through the proxy, the made-up host is never resolved: the request goes to the fault server.
        let result = try fetch(["fetch", "http://images.example.invalid/image/logo.png"],
                               environment: ["http_proxy": faults.baseURL])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(faults.requests.first?.target == "http://images.example.invalid/image/logo.png")
        // -x "": no proxy, the environment's neither (the made-up host is then looked up, and is not found).
        let direct = try fetch(["fetch", "-x", "", "http://images.example.invalid/image/photo.jpg"], environment: ["http_proxy": faults.baseURL])
        #expect(direct.status == 1 && direct.standardError.contains("cannot resolve host"), "\(direct.standardError)")
        #expect(faults.requests.count == 1)
        // A proxy whose name cannot be resolved is named as the proxy, not as the URL's host.
        let unnamed = try fetch(["fetch", "-x", "http://no-such-proxy.invalid:3128", server.url("logo.png")])
        #expect(unnamed.status == 1 && unnamed.standardError.contains("cannot resolve host: the proxy no-such-proxy.invalid"),
                "\(unnamed.standardError)")
        // A proxy setting that is no URL at all is said as that.
        let garbage = try fetch(["fetch", server.url("logo.png?garbage")], environment: ["http_proxy": "garbage value"])
        #expect(garbage.status == 1 && garbage.standardError.contains("the proxy (-x, or the proxy variable) is no proxy URL"),
                "\(garbage.standardError)")
        // The proxy's fault, not the host's: no host is given up for it.
        let several = try fetch(["fetch"] + (0..<5).map { server.url("logo.png?garbage\($0)") }, environment: ["http_proxy": "garbage value"])
        #expect(several.status == 1 && !several.standardError.contains("given up"), "\(several.standardError)")
        // So is one that refuses the connection, given with -x or by the environment.
        let closed = "http://127.0.0.1:\(try NginxServer.freePort())"
        for (arguments, environment) in [(["-x", closed], [String: String]()), ([], ["http_proxy": closed])] {
            let refused = try fetch(["fetch"] + arguments + [server.url("photo.jpg?refused")], environment: environment)
            #expect(refused.status == 1 && refused.standardError.contains("cannot connect: the proxy \(closed): refused the connection"),
                    "\(refused.standardError)")
        }
    }

    /// A host with letters past ASCII is fetched in its IDNA form, as curl fetches it; both spellings are one entry.
    @Test func anInternationalHostNameIsFetchedAndBothSpellingsShareOneEntry() throws {
        let port = server.url("logo.png").split(separator: ":")[2].split(separator: "/")[0]
        let unicode = try fetch(["--json", "fetch", "http://bücher.localhost:\(port)/logo.png"])
        #expect(unicode.status == 0, "\(unicode.standardError)")
        let ascii = try fetch(["--json", "fetch", "http://xn--bcher-kva.localhost:\(port)/logo.png"])
        #expect(try ascii.jsonLines().first?["cache"] as? String == "disk", "\(ascii.output) \(ascii.standardError)")
    }

    /// A proxy that wants credentials (407) is the proxy's trouble, not the URL's: named as the
    /// proxy's, and never remembered, so the URL is asked again once the proxy is put right.
    @Test func aProxysAuthenticationRequiredIsNotRememberedAgainstTheURL() throws {
        let url = "http://images.example.invalid/status/407"
        for _ in 0..<2 {
            let refused = try fetch(["fetch", url], environment: ["http_proxy": faults.baseURL])
            #expect(refused.status == 1 && refused.standardError.contains("HTTP 407 Proxy Authentication Required from the proxy \(faults.baseURL)"),
                    "\(refused.standardError)")
            #expect(!refused.standardError.contains("not tried again"), "\(refused.standardError)")
        }
        #expect(faults.requests.count == 2)
        // Credentials given in the proxy's URL and refused are said as such.
        let proxyWithUser = faults.baseURL.replacingOccurrences(of: "http://", with: "http://user:secret@")
        let refusedUser = try fetch(["fetch", "-x", proxyWithUser, url])
        #expect(refusedUser.standardError.contains("it refused the user and password given") && !refusedUser.standardError.contains("secret"),
                "\(refusedUser.standardError)")
        let failed = try fetch(["list", "--failed"])
        #expect(failed.status == 0 && !failed.output.contains("407"), "\(failed.output)")
    }

    /// A failure seen through a proxy of the environment answers only requests through it: the same
    /// URL asked directly is tried (and the other way round).
    @Test func aFailureThroughAProxyOfTheEnvironmentIsNotTheDirectRequests() throws {
        let url = server.url("missing-through-proxy.png")
        let proxied = try fetch(["fetch", url], environment: ["http_proxy": faults.baseURL])
        #expect(proxied.status == 1 && faults.requests.count == 1, "\(proxied.standardError)")
        let direct = try fetch(["fetch", url])
        #expect(direct.status == 1 && direct.standardError.contains("HTTP 404") && !direct.standardError.contains("not tried again"),
                "\(direct.standardError)")
        // Each is remembered for requests like it.
        #expect(try fetch(["fetch", url]).standardError.contains("not tried again"))
        #expect(try fetch(["fetch", url], environment: ["http_proxy": faults.baseURL]).standardError.contains("not tried again"))
        #expect(faults.requests.count == 1)
    }

    @Test func aSelfSignedCertificateNeedsInsecureWhichWarns() throws {
        let tls = try NginxServer(tls: true)
        let refused = try fetch(["fetch", tls.tlsURL("logo.png")])
        #expect(refused.status == 1)
        #expect(refused.standardError.contains("TLS certificate not accepted"))
        #expect(refused.standardError.contains("use -k"))
        let insecure = try fetch(["fetch", "-k", tls.tlsURL("logo.png")])
        #expect(insecure.status == 0, "\(insecure.standardError)")
        #expect(insecure.errorLines == ["imgcache: warning: --insecure: TLS certificates and host names are not verified"])
        #expect(try fetch(["-q", "fetch", "-k", tls.tlsURL("photo.jpg")]).standardError.isEmpty)
    }

    @Test func aRemoteStoreWithASelfSignedCertificateIsFailedWithTheSameAdvice() throws {
        let tls = try NginxServer(tls: true)
        let checked = try fetch(["remote", "check", "--remote", tls.tlsURL("store")])
        #expect(checked.status == 1)
        #expect(checked.output.contains("FAILED: reading a missing object: TLS certificate not accepted"), "\(checked.output)")
        #expect(checked.output.contains("(use -k to skip verification)"))
    }

    @Test func aFetchWhoseRemoteStoreHasASelfSignedCertificateSaysSoOnceAndStillAnswers() throws {
        let origin = try NginxServer()
        let store = try NginxServer(tls: true)
        let result = try fetch(["fetch", "--remote", store.tlsURL("store"), origin.url("logo.png"), origin.url("photo.jpg")])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.output.split(separator: "\n").count == 2)
        let said = result.errorLines.filter { $0.contains("TLS certificate not accepted") }
        #expect(said.count == 1, "\(result.standardError)")
        #expect(said.first?.hasSuffix("(use -k to skip verification)") == true, "\(said)")
    }

    @Test func anEndlessBodyIsCutAtMaxSizeAndNothingIsStored() throws {
        let result = try fetch(["fetch", "--max-size", "100k", faults.baseURL + "/endless"])
        #expect(result.status == 1)
        #expect(result.errorLines == ["imgcache: error: \(faults.baseURL)/endless: body larger than the limit of 100.0 kB (100000 bytes) (--max-size)"])
        #expect(CacheInspection.storedFiles(under: cacheRoot).isEmpty)
    }

    @Test func aStalledServerTimesOutAndATruncatedBodyIsNotStored() throws {
        let result = try fetch(["fetch", "--timeout", "1", faults.baseURL + "/stall", faults.baseURL + "/truncated/photo.jpg"])
        #expect(result.status == 1)
        #expect(result.errorLines.count == 2)
        #expect(result.errorLines.first?.hasSuffix("/stall: timed out after 1 s without progress") == true)
        #expect(result.errorLines.last?.contains("/truncated/photo.jpg: body cut short: received") == true, "\(result.standardError)")
        #expect(CacheInspection.storedFiles(under: cacheRoot).isEmpty)
    }

    @Test func retriesRetryA503ButNotA404() throws {
        let flaky = faults.baseURL + "/flaky/2/503/logo.png"
        let result = try fetch(["-v", "fetch", "--retries", "2", flaky, faults.baseURL + "/status/404"])
        #expect(result.status == 1)
        #expect(result.lines.count == 1)
        #expect(faults.requestCount(path: "/flaky/2/503/logo.png") == 3)
        #expect(faults.requestCount(path: "/status/404") == 1)
        #expect(result.errorLines.filter { $0.contains("retry ") && $0.contains("HTTP 503 Service Unavailable") }.count == 2)
        expectNoTemporaryFiles()
    }

    @Test func refreshKeepsTheFileOnA304AndReplacesItOnA200() throws {
        let site = try TemporaryDirectory("imgcache-site")
        let image = site.appending("art.webp")
        try Paths.fixture("sticker.webp").write(to: URL(fileURLWithPath: image))
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1_700_000_000)], ofItemAtPath: image)
        let origin = try NginxServer(serving: site.url)
        let url = origin.url("art.webp")

        let first = try fetch(["--json", "fetch", url])
        let stored = try #require(try first.jsonLines().first?["path"] as? String)
        let inode = try FileManager.default.attributesOfItem(atPath: stored)[.systemFileNumber] as? Int

        let unchanged = try fetch(["--json", "fetch", "--refresh", url])
        #expect(try unchanged.jsonLines().first?["cache"] as? String == "refreshed")
        #expect(try FileManager.default.attributesOfItem(atPath: stored)[.systemFileNumber] as? Int == inode, "304: same file")
        #expect(origin.requests.map(\.status) == [200, 304])

        try Paths.fixture("lossless.webp").write(to: URL(fileURLWithPath: image))
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1_700_000_100)], ofItemAtPath: image)
        let changed = try fetch(["--json", "fetch", "--refresh", url])
        let answer = try #require(try changed.jsonLines().first)
        #expect(answer["cache"] as? String == "refreshed")
        #expect(try Data(contentsOf: URL(fileURLWithPath: stored)) == Paths.fixture("lossless.webp"), "200: replaced")
        #expect(origin.requests.map(\.status) == [200, 304, 200])
        let hit = try fetch(["--json", "fetch", url])
        #expect(try hit.jsonLines().first?["cache"] as? String == "disk")
        #expect(try hit.jsonLines().first?["bytes"] as? Int == (try Paths.fixture("lossless.webp").count))
    }
}
