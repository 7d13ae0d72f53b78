import Synchronization

/// What other threads hand to the download thread: new submissions,
/// cancellations and the request to close, behind one lock.
final class Mailbox: Sendable {
    struct Mail {
        var submissions: [(DownloadTicket, DownloadSubmission)] = []
        var cancellations: [DownloadTicket] = []
        var cancelEverything = false
        var closing = false
    }

    private struct State {
        var mail = Mail()
        var nextTicket: UInt64 = 1
        /// Set by the download thread once the multi handle may no longer be woken.
        var closed = false
    }

    private let state = Mutex(State())
    /// Called with the lock held, so that it never runs after `markClosed`.
    private let wake: @Sendable () -> Void

    init(wake: @escaping @Sendable () -> Void) {
        self.wake = wake
    }

    /// Queues `submissions` as one batch, so that the order and priority rules see them together.
    func post(_ submissions: [DownloadSubmission]) -> [DownloadTicket] {
        state.withLock { state in
            let tickets = submissions.map { _ in
                defer { state.nextTicket += 1 }
                return DownloadTicket(id: state.nextTicket)
            }
            guard !state.closed else {
                for submission in submissions { submission.completion(.failure(.cancelled)) }
                return tickets
            }
            state.mail.submissions += zip(tickets, submissions)
            wake()
            return tickets
        }
    }

    func post(cancelling tickets: [DownloadTicket]) {
        state.withLock { state in
            guard !state.closed else { return }
            state.mail.cancellations += tickets
            wake()
        }
    }

    func postCancelEverything() {
        state.withLock { state in
            guard !state.closed else { return }
            state.mail.cancelEverything = true
            wake()
        }
    }

    func postClose() {
        state.withLock { state in
            guard !state.closed else { return }
            state.mail.closing = true
            wake()
        }
    }

    /// Takes everything posted since the last call (the close request stays set).
    func collect() -> Mail {
        state.withLock { state in
            let mail = state.mail
            state.mail = Mail(closing: mail.closing)
            return mail
        }
    }

    func markClosed() {
        state.withLock { $0.closed = true }
    }
}
