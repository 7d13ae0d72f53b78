#if canImport(Glibc)
import Glibc
#endif

/// A value that threads share behind a pthread mutex, with a condition
/// variable to wait on until the value is ready (a queue filled, credits
/// given back): `Mutex` from Synchronization cannot wait.
///
/// `@unchecked Sendable`: `state` is reached only through `withLock` and
/// `wait`, both holding the mutex; it came in `sending`, so no other
/// reference to it is left outside; the pthread objects live in stable heap
/// allocations owned by this object, and pthread calls are safe from any thread.
final class ConditionLock<State>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private let state: UnsafeMutablePointer<State>

    init(_ initial: sending State) {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
        state = UnsafeMutablePointer<State>.allocate(capacity: 1)
        state.initialize(to: initial)
    }

    deinit {
        state.deinitialize(count: 1)
        state.deallocate()
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        condition.deallocate()
    }

    /// Runs `body` on the state, holding the mutex.
    func withLock<Result>(_ body: (inout State) -> Result) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body(&state.pointee)
    }

    /// Waits until `ready` holds, then runs `body` on the state, all holding
    /// the mutex (released while waiting).
    func wait<Result>(until ready: (State) -> Bool, then body: (inout State) -> Result) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while !ready(state.pointee) { pthread_cond_wait(condition, mutex) }
        return body(&state.pointee)
    }

    /// `wait(until:then:)` giving up at `deadline` (CLOCK_REALTIME): nil when it passed first.
    func wait<Result>(until ready: (State) -> Bool, deadline: timespec, then body: (inout State) -> Result) -> Result? {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        var deadline = deadline
        while !ready(state.pointee) {
            if pthread_cond_timedwait(condition, mutex, &deadline) == ETIMEDOUT, !ready(state.pointee) { return nil }
        }
        return body(&state.pointee)
    }

    /// Wakes one waiting thread (after a change, outside or inside `withLock`).
    func signal() { pthread_cond_signal(condition) }

    /// Wakes every waiting thread.
    func broadcast() { pthread_cond_broadcast(condition) }
}
