#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A POSIX thread that runs one closure, joined exactly once.
public final class WorkerThread: Sendable {
    private struct State {
        var thread: pthread_t?
        var joined = false
    }
    private let state = Mutex(State())

    public init() {}

    /// The body, moved to the new thread through an unmanaged pointer.
    private final class Body {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }

    /// Starts `run` on a new thread whose SIGINT, SIGTERM, SIGHUP, SIGQUIT and
    /// SIGPIPE are blocked, so signals always reach the main thread.
    public func start(_ run: @escaping () -> Void) throws(SystemError) {
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
            throw SystemError("start a thread", errno: Errno(result))
        }
        state.withLock { $0.thread = thread }
    }

    /// Waits for the thread to end; later calls return at once.
    public func join() {
        let thread: pthread_t? = state.withLock { state in
            guard !state.joined, let thread = state.thread else { return nil }
            state.joined = true
            return thread
        }
        if let thread { pthread_join(thread, nil) }
    }
}
