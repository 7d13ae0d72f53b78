@testable import ImgCacheCore
import Testing

@Suite struct RetryPolicyTests {
    @Test func delaysGrowExponentiallyWithJitterUpToTheCap() {
        let policy = RetryPolicy()
        var generator = SystemRandomNumberGenerator()
        for retry in 1...12 {
            let full = min(policy.maximumDelay, policy.base * Double(1 << (retry - 1)))
            for _ in 0..<50 {
                let delay = policy.delay(beforeRetry: retry, retryAfter: nil, using: &generator)
                #expect(delay >= full / 2 && delay <= full)
            }
        }
    }

    @Test func retryAfterIsHonouredUpToItsCap() {
        let policy = RetryPolicy()
        var generator = SystemRandomNumberGenerator()
        #expect(policy.delay(beforeRetry: 1, retryAfter: 3, using: &generator) == 3)
        #expect(policy.delay(beforeRetry: 1, retryAfter: 3600, using: &generator) == policy.maximumRetryAfter)
    }

    @Test func onlyTransientNetworkAndServerFailuresAreRetried() {
        #expect(DownloadError.httpStatus(503).isRetryable && DownloadError.timeout(seconds: 1).isRetryable)
        #expect(DownloadError.connectionReset.isRetryable && DownloadError.httpStatus(429).isRetryable)
        #expect(!DownloadError.httpStatus(404).isRetryable && !DownloadError.tooLarge(limit: 1).isRetryable)
        #expect(!DownloadError.cancelled.isRetryable && !DownloadError.tooManyRedirects(limit: 10).isRetryable)
    }
}
