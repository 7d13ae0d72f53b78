@testable import ImgCacheCore
import Testing

/// The rules that share the machine between variant jobs: at most one a
/// worker, within the memory budget, and a job larger than the budget still
/// runs when it runs alone.
@Suite struct VariantQueueTests {
    func original(_ url: String, width: Int, height: Int) -> FetchResult {
        FetchResult(url: url, path: "/cache/" + url, cacheType: .downloaded,
                    metadata: EntryMetadata(fileName: url, inode: 1, byteCount: 0, key: url, url: url, format: .jpeg,
                                            width: width, height: height, frameCount: 1, storedAt: 0))
    }

    func queue(_ sizes: [Int]) -> VariantQueue {
        var queue = VariantQueue()
        for (index, side) in sizes.enumerated() {
            let url = "u\(index)"
            queue.add(original(url, width: side, height: side), fingerprint: KeyFingerprint(CacheKey(url)), first: index, url: url,
                      repeats: [])
        }
        return queue
    }

    @Test func noMoreJobsThanWorkers() {
        var jobs = queue([10, 10, 10, 10, 10])
        #expect(jobs.startable(workers: 2, budget: 1 << 30).map(\.token) == [0, 1])
        #expect(jobs.startable(workers: 2, budget: 1 << 30).isEmpty)
        let finished = jobs.finish(0, started: true)
        #expect(finished?.url == "u0")
        #expect(jobs.startable(workers: 2, budget: 1 << 30).map(\.token) == [2])
    }

    @Test func theMemoryBudgetHoldsJobsBackButNeverStarvesAHugeOne() {
        // 1000x1000 is 4 MB decoded: two fit in 9 MB, not three.
        var jobs = queue([1000, 1000, 1000, 5000])
        #expect(jobs.startable(workers: 8, budget: 9_000_000).map(\.token) == [0, 1])
        _ = jobs.finish(0, started: true)
        _ = jobs.finish(1, started: true)
        #expect(jobs.startable(workers: 8, budget: 9_000_000).map(\.token) == [2])
        _ = jobs.finish(2, started: true)
        // 100 MB, over the budget: alone, it runs.
        #expect(jobs.startable(workers: 8, budget: 9_000_000).map(\.token) == [3])
        #expect(jobs.running == 1 && jobs.bytesRunning == 100_000_000)
    }

    @Test func aRepeatJoinsTheAnswerBeingMade() {
        var jobs = queue([10])
        let key = KeyFingerprint(CacheKey("u0"))
        let joined = jobs.join(key, index: 5, url: "u0#again")
        let other = jobs.join(KeyFingerprint(CacheKey("other")), index: 6, url: "other")
        #expect(joined && !other)
        let held = jobs.finish(0, started: false)
        #expect(held?.repeats.map(\.0) == [5] && !jobs.contains(key) && jobs.isEmpty)
    }
}
