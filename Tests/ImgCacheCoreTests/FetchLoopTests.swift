import Foundation
@testable import ImgCacheCore
import Synchronization
import Testing

/// A downloader that answers as its script says, for testing the manager's
/// own rules without a network: it records every submission and answers each
/// at once from `script` (nil holds it until `cancelAll`).
///
/// `@unchecked Sendable`: every field is behind `state`'s lock.
final class ScriptedScheduler: DownloadScheduling, @unchecked Sendable {
    struct State {
        var submitted: [DownloadRequest] = []
        var held: [DownloadSubmission] = []
        var cancelAllCalls = 0
        var nextTicket: UInt64 = 1
    }

    let state = Mutex(State())
    let script: @Sendable (DownloadRequest) -> Result<DownloadedFile, DownloadError>?
    /// Called after each batch is recorded (from the manager's thread).
    let afterSubmit: @Sendable () -> Void
    /// Answers the batch's submissions in reverse order, to test that output keeps input order.
    let answersInReverse: Bool

    init(answersInReverse: Bool = false, afterSubmit: @escaping @Sendable () -> Void = {},
         script: @escaping @Sendable (DownloadRequest) -> Result<DownloadedFile, DownloadError>?) {
        self.script = script
        self.afterSubmit = afterSubmit
        self.answersInReverse = answersInReverse
    }

    var submitted: [DownloadRequest] { state.withLock { $0.submitted } }
    var cancelAllCalls: Int { state.withLock { $0.cancelAllCalls } }

    func submit(_ submissions: [DownloadSubmission]) -> [DownloadTicket] {
        let tickets = state.withLock { state in
            submissions.map { submission in
                state.submitted.append(submission.request)
                defer { state.nextTicket += 1 }
                return DownloadTicket(id: state.nextTicket)
            }
        }
        for submission in answersInReverse ? submissions.reversed() : submissions {
            if let answer = script(submission.request) {
                submission.completion(answer)
            } else {
                state.withLock { $0.held.append(submission) }
            }
        }
        afterSubmit()
        return tickets
    }

    func cancelAll() {
        let held = state.withLock { state in
            state.cancelAllCalls += 1
            defer { state.held = [] }
            return state.held
        }
        for submission in held { submission.completion(.failure(.cancelled)) }
    }

    func close() { cancelAll() }

    /// A download of `bytes`, as the real downloader would answer it.
    static func served(_ bytes: [UInt8], from url: String, contentType: String = "image/png") -> Result<DownloadedFile, DownloadError> {
        .success(DownloadedFile(body: .memory(bytes), response: DownloadResponse(
            statusCode: 200, effectiveURL: url, etag: "\"e\"", lastModified: nil, contentType: contentType, byteCount: Int64(bytes.count))))
    }
}

/// How many downloaders a fetcher made.
final class MadeCount: Sendable {
    let count = Atomic<Int>(0)
    var value: Int { count.load(ordering: .relaxed) }
}

/// The manager's loop with a scripted downloader: coalescing, answer order,
/// the failed-URL list, interruption, and hits that start no downloader.
@Suite final class FetchLoopTests {
    let root: String
    let png: [UInt8]

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("imgcache-loop-\(UUID().uuidString)").path
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/images/logo.png")
        png = [UInt8](try Data(contentsOf: fixtures))
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    var cache: DiskCache { DiskCache(location: CacheLocation(root: root, namespace: .default)) }

    /// Fetches `urls` through a fetcher using `scheduler`; the answers in delivery order.
    func fetch(_ urls: [String], with scheduler: ScriptedScheduler?, settings: FetchSettings = FetchSettings(),
               made: MadeCount = MadeCount(), interrupt: ((ImageFetcher) -> Void)? = nil)
        -> [(index: Int, result: Result<FetchResult, FetchError>)] {
        typealias Answer = (index: Int, result: Result<FetchResult, FetchError>)
        let fetcher = ImageFetcher(cache: cache, settings: settings) { (_) throws(DownloadError) in
            made.count.add(1, ordering: .relaxed)
            guard let scheduler else { throw .other(code: 0, message: "no downloader in this test") }
            return scheduler
        }
        interrupt?(fetcher)
        defer { fetcher.close() }
        var answers: [Answer] = []
        fetcher.fetch(urls) { index, result in answers.append((index: index, result: result)) }
        return answers
    }

    @Test func theSameURLTwiceIsDownloadedOnceAndAnsweredFromMemory() {
        let scheduler = ScriptedScheduler { [png] in ScriptedScheduler.served(png, from: $0.url.string) }
        let urls = ["http://h/a.png", "http://h/b.png", "http://h/a.png"]
        let answers = fetch(urls, with: scheduler)
        #expect(scheduler.submitted.map { $0.url.string } == ["http://h/a.png", "http://h/b.png"])
        #expect(answers.map(\.index) == [0, 1, 2])
        #expect(answers.compactMap { try? $0.result.get().cacheType } == [CacheType.none, CacheType.none, CacheType.memory])
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
