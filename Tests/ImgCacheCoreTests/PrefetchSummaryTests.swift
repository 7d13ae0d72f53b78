@testable import ImgCacheCore
import Testing

@Suite struct PrefetchSummaryTests {
    func outcome(_ result: Result<FetchResult, FetchError>?) -> FetchOutcome {
        FetchOutcome(index: 0, url: "u", result: result)
    }

    func fetched(_ type: CacheType) -> Result<FetchResult, FetchError> {
        .success(FetchResult(url: "u", path: "/p", cacheType: type,
                             metadata: EntryMetadata(fileName: "f", inode: 1, byteCount: 1, key: "u", url: "u", storedAt: 0)))
    }

    @Test func eachAnswerIsCountedOnce() {
        var summary = PrefetchSummary()
        for result in [fetched(.downloaded), fetched(.downloaded), fetched(.disk), fetched(.memory), fetched(.refreshed),
                       .failure(.download(url: "u", .httpStatus(503))), .failure(.notAnImage(url: "u", contentType: nil)),
                       .failure(.blacklisted(url: "u", reason: "r", failedAt: 0, ttl: .never, now: 0)),
                       .failure(.interrupted(url: "u")), nil, nil] {
            summary.count(outcome(result))
        }
        #expect(summary.urls == 9)
        #expect(summary.downloaded == 2 && summary.cached == 2 && summary.refreshed == 1)
        #expect(summary.failed == 2 && summary.blacklisted == 1 && summary.interrupted == 1 && summary.repeats == 2)
        #expect(!summary.allCached)
        var good = PrefetchSummary()
        good.count(outcome(fetched(.disk)))
        good.count(outcome(nil))
        #expect(good.allCached)
    }
}
