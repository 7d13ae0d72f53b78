/// One request being downloaded: its place in the queue, its attempts, and
/// who gets the answer. Lives on the download thread only. (Requests for the
/// same image are coalesced before they get here, by the fetcher, per cache key.)
final class DownloadJob {
    enum State {
        case queued
        /// Waiting until a monotonic time before the next attempt.
        case waitingToRetry(until: Double)
        case running(Transfer)
        case finished
    }

    let ticket: DownloadTicket
    let request: DownloadRequest
    let priority: DownloadPriority
    let outlivesInterruption: Bool
    /// Its lane in the queue (`DownloadQueue.lane`).
    let lane: Int
    /// The origin host it counts against (`HostPoliteness`); nil for a remote store's request.
    let politeHost: String?
    private let onEvent: (@Sendable (DownloadEvent) -> Void)?
    private var completion: (@Sendable (Result<DownloadedBody, DownloadError>) -> Void)?
    var state = State.queued
    /// Attempts started so far.
    var attempts = 0
    /// When the first attempt started (monotonic seconds).
    var firstStart: Double?

    init(_ submission: DownloadSubmission, ticket: DownloadTicket) {
        self.ticket = ticket
        request = submission.request
        priority = submission.priority
        outlivesInterruption = submission.outlivesInterruption
        lane = DownloadQueue<DownloadJob>.lane(submission.priority, submission.placement)
        politeHost = submission.placement == .byPriority ? HostPoliteness.host(of: submission.request) : nil
        onEvent = submission.onEvent
        completion = submission.completion
    }

    var isRunning: Bool {
        if case .running = state { return true }
        return false
    }

    var isQueued: Bool {
        if case .queued = state { return true }
        return false
    }

    /// Tells the requester about `event`.
    func notify(_ event: DownloadEvent) { onEvent?(event) }

    /// Whether the requester wants progress reports (they cost a clock read per write).
    var wantsEvents: Bool { onEvent != nil }

    /// Hands the answer to the requester, once.
    func finish(_ result: Result<DownloadedBody, DownloadError>) {
        state = .finished
        let waiting = completion
        completion = nil
        waiting?(result)
    }
}
