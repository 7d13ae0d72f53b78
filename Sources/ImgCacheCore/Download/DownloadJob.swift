/// One URL being downloaded for one or more requesters (coalescing): its
/// place in the queue, its attempts, and who gets the answer. Lives on the
/// download thread only.
final class DownloadJob {
    /// Whoever asked, and how to tell them.
    struct Requester {
        let ticket: DownloadTicket
        let onEvent: (@Sendable (DownloadEvent) -> Void)?
        let completion: @Sendable (Result<DownloadedBody, DownloadError>) -> Void
    }

    enum State {
        case queued
        /// Waiting until a monotonic time before the next attempt.
        case waitingToRetry(until: Double)
        case running(Transfer)
        case finished
    }

    let key: DownloadRequest.CoalescingKey
    let request: DownloadRequest
    /// The highest priority among the requesters.
    var priority: DownloadPriority
    var requesters: [Requester] = []
    var state = State.queued
    /// Attempts started so far.
    var attempts = 0
    /// When the first attempt started (monotonic seconds).
    var firstStart: Double?

    /// `key` is the one the job is filed under: a write's key is new each time it is asked for.
    init(request: DownloadRequest, key: DownloadRequest.CoalescingKey, priority: DownloadPriority) {
        self.key = key
        self.request = request
        self.priority = priority
    }

    var isQueued: Bool {
        if case .queued = state { return true }
        return false
    }

    /// Tells every requester about `event`.
    func notify(_ event: DownloadEvent) {
        for requester in requesters { requester.onEvent?(event) }
    }

    /// Whether anyone wants progress reports (they cost a clock read per write).
    var wantsEvents: Bool { requesters.contains { $0.onEvent != nil } }

    /// Hands the answer to every requester and forgets them.
    func finish(_ result: Result<DownloadedBody, DownloadError>) {
        state = .finished
        let waiting = requesters
        requesters = []
        for requester in waiting { requester.completion(result) }
    }
}
