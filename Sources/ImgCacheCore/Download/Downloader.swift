import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Downloads many URLs at once over libcurl's multi interface
/// (SDWebImageDownloader): a bounded number of transfers in flight, a queue
/// ordered by priority then FIFO or LIFO, connections kept alive and HTTP/2
/// multiplexed, transient failures retried with backoff. Each submission is
/// a transfer of its own: requests for one image are coalesced before, by
/// `ImageFetcher`, per cache key.
///
/// One thread of its own owns every libcurl handle. Submissions, cancellations
/// and `close()` may come from any thread; answers arrive on the download
/// thread through each submission's callbacks.
public final class Downloader: Sendable {
    public let configuration: DownloadConfiguration
    private let mailbox: Mailbox
    private let thread: WorkerThread

    /// Loads libcurl and starts the download thread.
    public init(configuration: DownloadConfiguration = DownloadConfiguration()) throws(DownloadError) {
        self.configuration = configuration
        let loop = try TransferLoop(configuration: configuration)
        let multi = WakeHandle(loop.multi)
        mailbox = Mailbox(wake: { multi.wake() })
        thread = WorkerThread()
        let mailbox = self.mailbox
        do {
            try thread.start { loop.run(mailbox) }
        } catch {
            throw .other(code: Int(error.errno.rawValue), message: error.description)
        }
    }

    deinit {
        close()
    }

    /// Queues `submissions` together: with free slots the order and priority
    /// rules choose among all of them, not just the first to arrive.
    @discardableResult
    public func submit(_ submissions: [DownloadSubmission]) -> [DownloadTicket] {
        mailbox.post(submissions)
    }

    @discardableResult
    public func submit(_ submission: DownloadSubmission) -> DownloadTicket {
        mailbox.post([submission])[0]
    }

    /// Withdraws one submission: its transfer stops and it is answered `cancelled`.
    public func cancel(_ ticket: DownloadTicket) {
        mailbox.post(cancelling: [ticket])
    }

    /// Cancels every submission not yet answered (for SIGINT), but those that outlive an interruption.
    public func cancelAll() {
        mailbox.postCancelEverything()
    }

    /// Downloads one request and waits for the answer.
    public func download(_ request: DownloadRequest, priority: DownloadPriority = .normal) throws(DownloadError) -> DownloadedBody {
        let answer = BlockingQueue<Result<DownloadedBody, DownloadError>>()
        submit(DownloadSubmission(request: request, priority: priority) { answer.push($0) })
        return try answer.pop().get()
    }

    /// Cancels what is left, writes the cookie jar, frees the handles and
    /// stops the thread. Later submissions are answered `cancelled`.
    public func close() {
        mailbox.postClose()
        thread.join()
    }
}

/// Lets another thread end the download thread's poll.
///
/// `@unchecked Sendable`: it only calls `curl_multi_wakeup`, which libcurl
/// allows from any thread, and `Mailbox` calls it only under its lock while
/// the multi handle is alive.
private struct WakeHandle: @unchecked Sendable {
    let multi: CurlMulti
    init(_ multi: CurlMulti) { self.multi = multi }
    func wake() { multi.wakeup() }
}
