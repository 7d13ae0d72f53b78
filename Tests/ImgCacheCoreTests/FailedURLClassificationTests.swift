@testable import ImgCacheCore
import Testing

@Suite struct FailedURLClassificationTests {
    let url = "http://h/a.png"

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
            #expect(error.rememberedScope(plainRequest: true) == nil, "\(error)")
        }
    }

    @Test func failuresThatDependOnTheRequestAnswerOnlyRequestsLikeIt() {
        for code in [401, 403, 407] {
            let error = FetchError.download(url: url, .httpStatus(code))
            #expect(error.rememberedScope(plainRequest: true) == .plainRequests)
            // With credentials, headers or cookies, the refusal may be theirs: not remembered.
            #expect(error.rememberedScope(plainRequest: false) == nil)
        }
        #expect(FetchError.download(url: url, .httpStatus(404)).rememberedScope(plainRequest: false) == .everyRequest)
        let tooLarge = FetchError.download(url: url, .tooLarge(limit: 1000)).rememberedScope(plainRequest: true)
        #expect(tooLarge == .sizeLimitUpTo(1000))
        #expect(tooLarge?.covers(plainRequest: true, sizeLimit: 1000) == true)
        #expect(tooLarge?.covers(plainRequest: true, sizeLimit: 500) == true)
        #expect(tooLarge?.covers(plainRequest: true, sizeLimit: 2000) == false)
        #expect(tooLarge?.covers(plainRequest: true, sizeLimit: nil) == false)
        #expect(FailedURLStore.Scope.plainRequests.covers(plainRequest: false, sizeLimit: nil) == false)
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
