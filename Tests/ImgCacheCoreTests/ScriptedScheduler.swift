import Foundation
@testable import ImgCacheCore
import Synchronization

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
    let script: @Sendable (DownloadRequest) -> Result<DownloadedBody, DownloadError>?
    /// Called after each batch is recorded (from the manager's thread).
    let afterSubmit: @Sendable () -> Void
    /// Answers the batch's submissions in reverse order, to test that output keeps input order.
    let answersInReverse: Bool

    init(answersInReverse: Bool = false, afterSubmit: @escaping @Sendable () -> Void = {},
         script: @escaping @Sendable (DownloadRequest) -> Result<DownloadedBody, DownloadError>?) {
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

    func cancel(_ ticket: DownloadTicket) {}

    func close() { cancelAll() }

    /// A download of `bytes`, as the real downloader would answer it.
    static func served(_ bytes: [UInt8], from url: String, contentType: String = "image/png") -> Result<DownloadedBody, DownloadError> {
        .success(DownloadedBody(body: .memory(bytes), response: DownloadResponse(
            statusCode: 200, effectiveURL: url, etag: "\"e\"", lastModified: nil, contentType: contentType, byteCount: Int64(bytes.count))))
    }
}

/// How many downloaders a fetcher made.
final class MadeCount: Sendable {
    let count = Atomic<Int>(0)
    var value: Int { count.load(ordering: .relaxed) }
}

extension ScriptedScheduler {
    typealias Answer = (index: Int, result: Result<FetchResult, FetchError>)

    /// Fetches `urls` into `cache` through a fetcher using `scheduler` (nil:
    /// making a downloader fails); the answers in delivery order.
    static func fetch(_ urls: [String], cache: DiskCache, with scheduler: ScriptedScheduler?, settings: FetchSettings = FetchSettings(),
                      made: MadeCount = MadeCount(), interrupt: ((ImageFetcher) -> Void)? = nil) -> [Answer] {
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

    /// The sample PNG the tests serve (a checkout without it cannot run them).
    static let samplePNG: [UInt8] = {
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/images/logo.png")
        guard let bytes = try? [UInt8](Data(contentsOf: fixture)), !bytes.isEmpty else { preconditionFailure("missing \(fixture.path)") }
        return bytes
    }()
}
