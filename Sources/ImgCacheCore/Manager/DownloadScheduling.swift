/// What the manager needs of a downloader: take a batch of requests, cancel
/// them all, close. `Downloader` is the real one; tests give the manager a
/// scripted one, to check its own rules (coalescing, order, interruption,
/// the failed-URL list) without a network.
public protocol DownloadScheduling: AnyObject, Sendable {
    /// Queues `submissions` together; each is answered through its completion.
    @discardableResult
    func submit(_ submissions: [DownloadSubmission]) -> [DownloadTicket]
    /// Withdraws submissions not yet answered: each is answered `cancelled`.
    func cancel(_ ticket: DownloadTicket)
    /// Cancels every submission not yet answered.
    func cancelAll()
    /// Cancels what is left and waits until nothing more will be answered.
    func close()
}

extension Downloader: DownloadScheduling {}
