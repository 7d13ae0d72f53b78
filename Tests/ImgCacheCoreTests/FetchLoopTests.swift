import Foundation
@testable import ImgCacheCore
import Synchronization
import Testing

/// The manager's loop with a scripted downloader: coalescing, answer order,
/// the failed-URL list, interruption, and hits that start no downloader.
@Suite final class FetchLoopTests {
    let root: String
    let png: [UInt8]

    init() {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("imgcache-loop-\(UUID().uuidString)").path
        png = ScriptedScheduler.samplePNG
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    var cache: DiskCache { DiskCache(location: CacheLocation(root: root, namespace: .default)) }

    /// Fetches `urls` through a fetcher using `scheduler`; the answers in delivery order.
    func fetch(_ urls: [String], with scheduler: ScriptedScheduler?, settings: FetchSettings = FetchSettings(),
               made: MadeCount = MadeCount(), interrupt: ((ImageFetcher) -> Void)? = nil) -> [ScriptedScheduler.Answer] {
        ScriptedScheduler.fetch(urls, cache: cache, with: scheduler, settings: settings, made: made, interrupt: interrupt)
    }

    @Test func theSameURLTwiceIsDownloadedOnceAndAnsweredFromMemory() {
        let scheduler = ScriptedScheduler { [png] in ScriptedScheduler.served(png, from: $0.url.string) }
        let urls = ["http://h/a.png", "http://h/b.png", "http://h/a.png"]
        let answers = fetch(urls, with: scheduler)
        #expect(scheduler.submitted.map { $0.url.string } == ["http://h/a.png", "http://h/b.png"])
        #expect(answers.map(\.index) == [0, 1, 2])
        #expect(answers.compactMap { try? $0.result.get().cacheType } == [CacheType.downloaded, CacheType.downloaded, CacheType.memory])
    }

    @Test func answersKeepTheInputOrderWhateverOrderDownloadsEnd() {
        let scheduler = ScriptedScheduler(answersInReverse: true) { [png] in ScriptedScheduler.served(png, from: $0.url.string) }
        let urls = (0..<8).map { "http://h/\($0).png" }
        let answers = fetch(urls, with: scheduler)
        #expect(answers.map(\.index) == Array(0..<8))
        #expect(answers.compactMap { try? $0.result.get().url } == urls)
    }

    @Test func aLastingFailureIsRememberedAndTheNextRunMakesNoRequest() {
        let notFound = ScriptedScheduler { _ in .failure(.httpStatus(404)) }
        let first = fetch(["http://h/gone.png"], with: notFound)
        guard case .failure(.download(_, .httpStatus(404)))? = first.first?.result else {
            Issue.record("\(first)")
            return
        }
        let made = MadeCount()
        let second = fetch(["http://h/gone.png"], with: nil, made: made)
        guard case .failure(.blacklisted)? = second.first?.result else {
            Issue.record("\(second)")
            return
        }
        #expect(made.value == 0, "no downloader for a URL the list answers")
        // A transient failure is not remembered: the next run asks again.
        let unavailable = ScriptedScheduler { _ in .failure(.httpStatus(503)) }
        _ = fetch(["http://h/busy.png"], with: unavailable)
        let again = ScriptedScheduler { _ in .failure(.httpStatus(503)) }
        _ = fetch(["http://h/busy.png"], with: again)
        #expect(again.submitted.count == 1)
    }

    /// Which downloader failure the answers name, and the status a run ends with.
    func startFailure(_ failure: DownloadError) -> [FetchError] {
        let fetcher = ImageFetcher(cache: cache, settings: FetchSettings()) { (_) throws(DownloadError) in throw failure }
        defer { fetcher.close() }
        var errors: [FetchError] = []
        fetcher.fetch(["http://h/a.png", "http://h/b.png"]) { _, result in
            if case .failure(let error) = result { errors.append(error) }
        }
        return errors
    }

    @Test func aDownloaderThatCannotStartIsNotCalledAMissingLibrary() {
        let noThread = startFailure(.other(code: 11, message: "cannot start a thread: Resource temporarily unavailable"))
        #expect(noThread == Array(repeating: .downloaderUnavailable("cannot start a thread: Resource temporarily unavailable (curl error 11)"), count: 2))
        #expect(noThread.map(\.exitStatus) == [.systemError, .systemError])
        #expect(noThread.first?.message.hasPrefix("cannot start downloading: cannot start a thread") == true)

        let noCurl = startFailure(.libraryMissing("libcurl.so.4 is not installed"))
        #expect(noCurl == Array(repeating: .libraryMissing("libcurl.so.4 is not installed"), count: 2))
        #expect(noCurl.map(\.exitStatus) == [.unavailable, .unavailable])
        #expect(!noThread.contains { $0.isRemembered } && !noCurl.contains { $0.isRemembered })
    }

    @Test func theMostSeriousFailureDecidesTheStatus() {
        var summary = PrefetchSummary()
        #expect(summary.status == .success)
        for error in [FetchError.download(url: "u", .httpStatus(404)), .cacheUnwritable(SystemError("write", errno: .noSpace)),
                      .downloaderUnavailable("no thread"), .revalidationRaced(url: "u")] {
            summary.count(FetchOutcome(index: 0, url: "u", result: .failure(error)))
        }
        #expect(summary.status == .cacheUnwritable)
        #expect(ExitStatus.worse(.someFailed, .noInput) == .noInput)
        #expect(ExitStatus.worse(.systemError, .unavailable) == .systemError)
        // Every status has its rank: the worse of two does not depend on their order.
        for first in ExitStatus.allCases {
            for second in ExitStatus.allCases {
                #expect(ExitStatus.worse(first, second) == ExitStatus.worse(second, first), "\(first) \(second)")
            }
        }
        #expect(FetchError.revalidationRaced(url: "u").exitStatus == .someFailed)
        #expect(!FetchError.revalidationRaced(url: "u").isRemembered)
    }

    @Test func aHitStartsNoDownloader() throws {
        let scheduler = ScriptedScheduler { [png] in ScriptedScheduler.served(png, from: $0.url.string) }
        _ = fetch(["http://h/a.png"], with: scheduler)
        let made = MadeCount()
        let answers = fetch(["http://h/a.png"], with: nil, made: made)
        #expect(try answers.first?.result.get().cacheType == .disk)
        #expect(made.value == 0)
    }

    @Test func anInterruptionCancelsTheTransfersAndAnswersInterrupted() {
        let interruption = Mutex<FetchInterruption?>(nil)
        // Nothing is answered; once the batch is submitted, a signal arrives from another thread.
        let scheduler = ScriptedScheduler(afterSubmit: {
            let target = interruption.withLock { $0 }
            Thread.detachNewThread { target?.interrupt(signal: SIGINT) }
        }, script: { _ in nil })
        let answers = fetch(["http://h/a.png", "http://h/b.png"], with: scheduler, interrupt: { fetcher in
            let target = fetcher.interruption
            interruption.withLock { $0 = target }
        })
        #expect(scheduler.cancelAllCalls >= 1)
        #expect(answers.count == 2)
        for answer in answers {
            guard case .failure(.interrupted) = answer.result else { Issue.record("\(answer)"); continue }
        }
        #expect(FailedURLStore(namespaceDirectory: cache.directory).lookup(CacheKey("http://h/a.png"), ttl: .never, now: 0) == nil,
                "an interruption is not remembered")
    }

    @Test func bytesThatAreNoImageAreRefusedAndRemembered() {
        let scheduler = ScriptedScheduler { ScriptedScheduler.served(Array("<html></html>".utf8), from: $0.url.string, contentType: "text/html") }
        let answers = fetch(["http://h/page.png"], with: scheduler)
        guard case .failure(.notAnImage)? = answers.first?.result else { Issue.record("\(answers)"); return }
        #expect(FailedURLStore(namespaceDirectory: cache.directory).lookup(CacheKey("http://h/page.png"), ttl: .never, now: 0) != nil)
    }
}
