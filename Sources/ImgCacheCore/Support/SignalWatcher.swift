#if canImport(Glibc)
import Glibc
#endif

/// Turns SIGINT and SIGTERM into calls on a thread of its own (sigwait), so
/// that a long run can stop cleanly: no code runs in a signal handler, and the
/// thread that stores images never sees EINTR.
///
/// `start` must run on the main thread before other threads are created;
/// every thread then has the signals blocked, and only the watcher takes them.
/// A second signal ends the process at once with the usual status (128 +
/// signal), after removing the temporary files the process has open.
public enum SignalWatcher {
    /// The signals a run stops on.
    public static let signals: [Int32] = [SIGINT, SIGTERM]

    /// Unblocks the signals imgcache reacts to, which a parent may have left
    /// blocked (some process launchers do), so that they act by default.
    public static func restoreDefaults() {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals + [SIGHUP, SIGQUIT] { sigaddset(&set, signal) }
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }

    /// Starts watching; `handle` runs on the watcher thread with the first
    /// signal. Signals the parent set to be ignored (a background job's
    /// SIGINT) stay ignored.
    public static func start(_ handle: @escaping @Sendable (Int32) -> Void) throws(SystemError) {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals where !isIgnored(signal) { sigaddset(&set, signal) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
        let watched = set
        // Detached: it waits in sigwait for as long as the process lives.
        try WorkerThread.startDetached {
            var set = watched
            var received: Int32 = 0
            var first = true
            while sigwait(&set, &received) == 0 {
                if first {
                    first = false
                    handle(received)
                } else {
                    let note = "imgcache: interrupted again: stopped at once\n"
                    _ = note.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
                    TemporaryFile.exitRemovingLiveFiles(status: 128 + received)
                }
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
