import Synchronization

/// What other threads tell the fetching thread.
enum FetchMessage: Sendable {
    case event(Int, DownloadEvent)
    case finished(Int, Result<DownloadedBody, DownloadError>)
    /// URLs of a list, looked up on its reader thread.
    case looked([ListLookup.Item])
    /// A remote store's answer for the request in a slot: the object, nil when it has none.
    /// `seconds`: from the question to the answer, timed on the store's side (not the manager's backlog).
    case remote(slot: Int, store: Int, Result<[UInt8]?, RemoteFailure>, seconds: Double)
    /// A remote store's answer to a write.
    case remoteWritten(store: Int, Result<Bool, RemoteFailure>, seconds: Double)
    /// An image's variants made on a worker thread (the job's token), with the `-v` lines it logged.
    case variantsMade(token: Int, Result<FetchResult, FetchError>, log: [String])
    /// Something to look at (an interruption).
    case wake
}

/// Stops a run from another thread: no new work starts, transfers are
/// aborted (their temporary files removed), and what is left is answered
/// `interrupted`. A second request hurries the stop: nothing more is waited
/// for (transfers being cancelled, remote stores' answers and writes), but
/// the answers and the summary are still given.
public final class FetchInterruption: Sendable {
    private let received = Atomic<Int32>(0)
    private let requests = Atomic<Int>(0)
    private let messages: BlockingQueue<FetchMessage>

    init(messages: BlockingQueue<FetchMessage>) {
        self.messages = messages
    }

    /// Asks the run to stop because of `signal`; the first signal is the one
    /// kept, a later one hurries the stop.
    public func interrupt(signal: Int32) {
        _ = received.compareExchange(expected: 0, desired: signal, ordering: .relaxed)
        requests.add(1, ordering: .relaxed)
        // Whatever a library in them is doing, the decode workers end now.
        WorkerRegistry.shared.stopAll()
        messages.push(.wake)
    }

    /// The signal that interrupted the run, if any.
    public var signal: Int32? {
        let value = received.load(ordering: .relaxed)
        return value == 0 ? nil : value
    }

    /// Whether the stop was asked for again: nothing more is waited for.
    public var isHurried: Bool {
        requests.load(ordering: .relaxed) > 1
    }
}
