#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A POSIX thread that runs one closure, joined exactly once; or, through
/// `startDetached`, one that nobody waits for.
package final class WorkerThread: Sendable {
    private struct State {
        var thread: pthread_t?
        var joined = false
    }
    private let state = Mutex(State())

    package init() {}

    /// The body, moved to the new thread through an unmanaged pointer.
    private final class Body {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }

    /// Starts `run` on a new thread whose SIGINT, SIGTERM, SIGHUP, SIGQUIT and
    /// SIGPIPE are blocked, so signals reach the thread meant for them (the
    /// main thread, or `SignalWatcher`'s, which waits for them in `sigwait`). `run` is
    /// `sending`: what it captures belongs to the new thread from then on, and
    /// the compiler refuses a caller that goes on using it.
    package func start(_ run: sending @escaping () -> Void) throws(SystemError) {
        let thread = try WorkerThread.create(run, detached: false)
        state.withLock { $0.thread = thread }
    }

    /// Starts `run` on a thread that is never joined; the system frees it when
    /// it ends. Only for threads that may be blocked when the process is done
    /// with them (a `read` of a pipe, `sigwait`), which the exit ends.
    package static func startDetached(_ run: sending @escaping () -> Void) throws(SystemError) {
        _ = try create(run, detached: true)
    }

    private static func create(_ run: sending @escaping () -> Void, detached: Bool) throws(SystemError) -> pthread_t {
        let context = Unmanaged.passRetained(Body(run)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        if detached { pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED)) }
        var thread = pthread_t()
        let result = pthread_create(&thread, &attributes, { raw in
            // Signals are for the main thread or the signal watcher (SIGINT ends a prefetch there).
            var blocked = sigset_t()
            sigemptyset(&blocked)
            for signal in [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE] { sigaddset(&blocked, signal) }
            pthread_sigmask(SIG_BLOCK, &blocked, nil)
            Unmanaged<Body>.fromOpaque(raw!).takeRetainedValue().run()
            return nil
        }, context)
        guard result == 0 else {
            Unmanaged<Body>.fromOpaque(context).release()
            throw SystemError("start a thread", errno: Errno(result))
        }
        return thread
    }

    /// Waits for the thread to end; later calls return at once.
    package func join() {
        let thread: pthread_t? = state.withLock { state in
            guard !state.joined, let thread = state.thread else { return nil }
            state.joined = true
            return thread
        }
        if let thread { pthread_join(thread, nil) }
    }
}
