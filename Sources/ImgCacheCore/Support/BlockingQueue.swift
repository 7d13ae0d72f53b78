#if canImport(Glibc)
import Glibc
#endif

/// A first-in first-out queue that one thread waits on while others fill it:
/// how results cross from the download thread to the thread that stores and
/// prints them.
///
/// `@unchecked Sendable`: every access to `items` happens with `mutex` held,
/// and the pthread objects live in stable heap allocations owned by the queue.
public final class BlockingQueue<Element: Sendable>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var items: [Element] = []
    private var head = 0

    public init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        condition.deallocate()
    }

    /// Adds an element and wakes a waiting thread.
    public func push(_ element: Element) {
        pthread_mutex_lock(mutex)
        items.append(element)
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }

    /// The oldest element, waiting for one if the queue is empty.
    public func pop() -> Element {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while head == items.count { pthread_cond_wait(condition, mutex) }
        return takeHead()
    }

    /// The oldest element, waiting at most `timeout` seconds for one.
    public func pop(timeout: Double) -> Element? {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let total = Int(now.tv_nsec) + Int(timeout * 1e9)
        var deadline = timespec(tv_sec: now.tv_sec + total / 1_000_000_000, tv_nsec: total % 1_000_000_000)
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while head == items.count {
            if pthread_cond_timedwait(condition, mutex, &deadline) == ETIMEDOUT, head == items.count { return nil }
        }
        return takeHead()
    }

    /// The oldest element if there is one, without waiting.
    public func tryPop() -> Element? {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return head == items.count ? nil : takeHead()
    }

    /// Removes and returns the head; the mutex is held.
    private func takeHead() -> Element {
        let element = items[head]
        head += 1
        if head == items.count || head > 1024 && head * 2 > items.count {
            items.removeFirst(head)
            head = 0
        }
        return element
    }
}
