@testable import ImgCacheCore
import Testing

/// The misses waiting for a download lock (`DeferredDownloads`): a queue fed as fast as it is taken
/// keeps a bounded size, however long the list (it used to keep a slot for every URL), repeats still
/// join the miss they repeat, and by server the earliest miss of a server with room comes first.
@Suite struct DeferredDownloadsTests {
    static func miss(_ index: Int) -> (LookupOutcome, PendingFetch) {
        let url = "http://h/\(index).png"
        let key = CacheKey(url)
        return (.refused(.invalidURL(url: url, reason: "test")),
                PendingFetch(url: url, key: key, fingerprint: KeyFingerprint(key), cached: nil, firstIndex: index))
    }

    @Test func aQueueFedAsFastAsItIsTakenStaysSmall() {
        var run = FetchRun(repeats: .skipped, list: nil)
        var taken: [Int] = []
        for index in 0..<100_000 {
            let (outcome, request) = Self.miss(index)
            run.deferDownload(outcome, request)
            // Ten behind: the queue never empties.
            if index >= 10, let next = run.nextDeferredDownload() { taken.append(next.request.firstIndex) }
            let slots = run.lockDeferred.slotCount
            #expect(slots <= 1024, "\(slots) slots after \(index + 1) URLs")
            if slots > 1024 { break }
        }
        #expect(taken == Array(0..<taken.count) && taken.count == 100_000 - 10)
        // A repeat joins its miss after the queue was compacted.
        let (_, waiting) = Self.miss(99_995)
        let joined = run.joinDeferred(waiting.fingerprint, index: 200_000, url: waiting.url)
        #expect(joined)
        while let next = run.nextDeferredDownload() {
            if next.request.firstIndex == 99_995 { #expect(next.request.repeats.map { $0.0 } == [200_000]) }
        }
        #expect(!run.hasDeferredDownloads)
    }

    @Test func theEarliestMissOfAServerWithRoomComesFirst() {
        var queue = DeferredDownloads()
        for index in 0..<9 {
            let (outcome, request) = Self.miss(index)
            queue.append(outcome, request, server: ["slow", "fast", "other"][index < 4 ? 0 : (index < 7 ? 1 : 2)])
        }
        // The slow server has no room: the others' misses in the list's order, then the slow one's.
        var taken: [Int] = []
        while let next = queue.take(where: { $0 != "slow" }) { taken.append(next.request.firstIndex) }
        #expect(taken == [4, 5, 6, 7, 8])
        while let next = queue.take() { taken.append(next.request.firstIndex) }
        #expect(taken == [4, 5, 6, 7, 8, 0, 1, 2, 3] && queue.isEmpty)
    }
}
