#if canImport(Glibc)
import Glibc
#endif

/// Turns SIGINT and SIGTERM into calls on a thread of its own (sigwait), so
/// that a long run can stop cleanly: no code runs in a signal handler, and the
/// thread that stores images never sees EINTR.
///
/// `start` must run on the main thread before other threads are created;
/// every thread then has the signals blocked, and only the watcher takes them.
/// Every signal is handed on, however many arrive (`timeout` and a Ctrl-C in
/// a pipeline send two at once): the run cuts its waiting short and still
/// prints what it has. Only a process that is still running
/// `forcedExitDelay` seconds after its second signal (stuck in a call that
/// cannot be cut short) is ended there, after its temporary files are removed.
public enum SignalWatcher {
    /// The signals a run stops on.
    public static let signals: [Int32] = [SIGINT, SIGTERM]

    /// How long a run may still take after its second signal.
    public static let forcedExitDelay = 10

    /// Unblocks the signals imgcache reacts to, which a parent may have left
    /// blocked (some process launchers do), so that they act by default.
    public static func restoreDefaults() {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals + [SIGHUP, SIGQUIT] { sigaddset(&set, signal) }
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }

    /// Starts watching; `handle` runs on the watcher thread with each signal
    /// and how many have arrived (1 for the first). Signals the parent set to
    /// be ignored (a background job's SIGINT) stay ignored.
    public static func start(_ handle: @escaping @Sendable (_ signal: Int32, _ count: Int) -> Void) throws(SystemError) {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals where !isIgnored(signal) { sigaddset(&set, signal) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
        let watched = set
        // Detached: it waits in sigwait for as long as the process lives.
        try WorkerThread.startDetached {
            var set = watched
            var count = 0
            var firstSignal = SIGINT
            var deadline: timespec?
            while true {
                var received: Int32 = 0
                if let end = deadline {
                    var now = timespec()
                    clock_gettime(CLOCK_MONOTONIC, &now)
                    var left = timespec(tv_sec: max(0, end.tv_sec - now.tv_sec), tv_nsec: 0)
                    switch SystemCall.waitForSignal(&set, timeout: &left) {
                    case .success(let signal):
                        received = signal
                    case .failure(.interrupted):
                        continue
                    case .failure:
                        let note = "imgcache: still running \(forcedExitDelay) s after the second signal: stopped at once\n"
                        _ = note.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
                        TemporaryFile.exitRemovingLiveFiles(status: 128 + firstSignal)
                    }
                } else if sigwait(&set, &received) != 0 {
                    return
                }
                count += 1
                if count == 1 { firstSignal = received }
                if count == 2 {
                    var now = timespec()
                    clock_gettime(CLOCK_MONOTONIC, &now)
                    deadline = timespec(tv_sec: now.tv_sec + forcedExitDelay, tv_nsec: 0)
                }
                handle(received, count)
            }
        }
    }

    private static func isIgnored(_ signal: Int32) -> Bool {
        var current = sigaction()
        sigaction(signal, nil, &current)
        // SIG_IGN is the handler value 1.
        return current.__sigaction_handler.sa_handler.map { unsafeBitCast($0, to: Int.self) } == 1
    }
}
