import ImgCacheCore
import Testing

/// How long a response is fresh, from its headers (RFC 9111 §4.2).
@Suite struct HTTPFreshnessTests {
    let now = 1_700_000_000.0
    let date = "Tue, 14 Nov 2023 22:13:20 GMT"  // `now`

    @Test func maxAgeWinsOverExpiresAndAgeCountsAgainstIt() {
        let response = HTTPFreshness(cacheControl: "public, max-age=600", expires: "Tue, 14 Nov 2023 23:13:20 GMT", date: date, age: "100")
        #expect(response.freshUntil(received: now) == now + 500)
    }

    @Test func expiresCountsFromDate() {
        #expect(HTTPFreshness(expires: "Tue, 14 Nov 2023 23:13:20 GMT", date: date).freshUntil(received: now) == now + 3600)
        // An Expires that is no date (often "0") is already past.
        #expect(HTTPFreshness(expires: "0", date: date).freshUntil(received: now) == now)
    }

    @Test func withoutEitherATenthOfTheAgeSinceLastModified() {
        let modified = "Sat, 04 Nov 2023 22:13:20 GMT"  // ten days before
        #expect(HTTPFreshness(date: date, lastModified: modified).freshUntil(received: now) == now + 86_400)
        #expect(HTTPFreshness().freshUntil(received: now) == nil)
    }

    @Test func noCacheAndMalformedValuesAreStaleAndHugeOnesCapped() {
        #expect(HTTPFreshness(cacheControl: "no-cache, max-age=600").freshUntil(received: now) == now)
        #expect(HTTPFreshness(cacheControl: "max-age=soon").freshUntil(received: now) == now)
        #expect(HTTPFreshness(cacheControl: "max-age=99999999999999999999999").freshUntil(received: now) == now + 10 * 365 * 86_400)
        #expect(HTTPFreshness(cacheControl: "max-age=60", age: "1e308").freshUntil(received: now).map { $0 < now } == true)
    }
}
