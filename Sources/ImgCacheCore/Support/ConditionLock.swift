#if canImport(Glibc)
import Glibc
#endif

/// A pthread mutex with its condition variable: what a thread waits on while
/// another fills a queue or gives back credits.
///
/// `@unchecked Sendable`: the pthread objects live in stable heap allocations
/// owned by this object, and pthread calls are safe from any thread.
final class ConditionLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        condition.deallocate()
    }

    /// Runs `body` holding the mutex.
    func withLock<Result>(_ body: () -> Result) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body()
    }

    /// Waits for a signal; call it holding the mutex (inside `withLock`).
    func wait() {
        pthread_cond_wait(condition, mutex)
    }

    /// Waits for a signal until `deadline` (CLOCK_REALTIME); false when it passed.
    func wait(until deadline: timespec) -> Bool {
        var deadline = deadline
        return pthread_cond_timedwait(condition, mutex, &deadline) != ETIMEDOUT
    }

    /// Wakes one waiting thread.
    func signal() { pthread_cond_signal(condition) }

    /// Wakes every waiting thread.
    func broadcast() { pthread_cond_broadcast(condition) }
}
