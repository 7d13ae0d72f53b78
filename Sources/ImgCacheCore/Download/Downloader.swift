import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Downloads many URLs at once over libcurl's multi interface
/// (SDWebImageDownloader): a bounded number of transfers in flight, a queue
/// ordered by priority then FIFO or LIFO, identical requests coalesced into
/// one transfer, connections kept alive and HTTP/2 multiplexed, transient
/// failures retried with backoff.
///
/// One thread of its own owns every libcurl handle. Submissions, cancellations
/// and `close()` may come from any thread; answers arrive on the download
/// thread through each submission's callbacks.
public final class Downloader: Sendable {
    public let configuration: DownloadConfiguration
    private let mailbox: Mailbox
    private let thread: DownloadThread

    /// Loads libcurl and starts the download thread.
    public init(configuration: DownloadConfiguration = DownloadConfiguration()) throws(DownloadError) {
        self.configuration = configuration
        let loop = try TransferLoop(configuration: configuration)
        let multi = WakeHandle(loop.multi)
        mailbox = Mailbox(wake: { multi.wake() })
        thread = DownloadThread()
        let mailbox = self.mailbox
        try thread.start { loop.run(mailbox) }
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

    /// Withdraws one submission: it is answered `cancelled` at once; the
    /// transfer goes on while other requesters still want it.
    public func cancel(_ ticket: DownloadTicket) {
        mailbox.post(cancelling: [ticket])
    }

    /// Cancels every submission not yet answered (for SIGINT).
    public func cancelAll() {
        mailbox.postCancelEverything()
    }

    /// Downloads one request and waits for the answer.
    public func download(_ request: DownloadRequest, priority: DownloadPriority = .normal) throws(DownloadError) -> DownloadedFile {
        let answer = BlockingQueue<Result<DownloadedFile, DownloadError>>()
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

/// A POSIX thread that runs one closure, joined exactly once.
final class DownloadThread: Sendable {
    private struct State {
        var thread: pthread_t?
        var joined = false
    }
    private let state = Mutex(State())

    /// The body, moved to the new thread through an unmanaged pointer.
    private final class Body {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }

    func start(_ run: @escaping () -> Void) throws(DownloadError) {
        let context = Unmanaged.passRetained(Body(run)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { raw in
            // Signals are for the main thread (SIGINT ends a prefetch there).
            var blocked = sigset_t()
            sigemptyset(&blocked)
            for signal in [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE] { sigaddset(&blocked, signal) }
            pthread_sigmask(SIG_BLOCK, &blocked, nil)
            Unmanaged<Body>.fromOpaque(raw!).takeRetainedValue().run()
            return nil
        }, context)
        guard result == 0 else {
            Unmanaged<Body>.fromOpaque(context).release()
            throw .other(code: Int(result), message: "cannot start the download thread: " + String(cString: strerror(result)))
        }
        state.withLock { $0.thread = thread }
    }

    func join() {
        let thread: pthread_t? = state.withLock { state in
            guard !state.joined, let thread = state.thread else { return nil }
            state.joined = true
            return thread
        }
        if let thread { pthread_join(thread, nil) }
    }
}
