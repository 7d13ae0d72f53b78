#if canImport(Glibc)
import Glibc
#endif

/// A first-in first-out queue that one thread waits on while others fill it:
/// how results cross from the download thread to the thread that stores and
/// prints them.
///
/// `@unchecked Sendable`: every access to `items` and `head` happens inside
/// `lock.withLock`.
package final class BlockingQueue<Element: Sendable>: @unchecked Sendable {
    private let lock = ConditionLock()
    private var items: [Element] = []
    private var head = 0

    package init() {}

    /// Adds an element and wakes a waiting thread.
    package func push(_ element: Element) {
        lock.withLock {
            items.append(element)
            lock.signal()
        }
    }

    /// The oldest element, waiting for one if the queue is empty.
    package func pop() -> Element {
        lock.withLock {
            while head == items.count { lock.wait() }
            return takeHead()
        }
    }

    /// The oldest element, waiting at most `timeout` seconds for one.
    package func pop(timeout: Double) -> Element? {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let total = Int(now.tv_nsec) + Int(timeout * 1e9)
        let deadline = timespec(tv_sec: now.tv_sec + total / 1_000_000_000, tv_nsec: total % 1_000_000_000)
        return lock.withLock {
            while head == items.count {
                if !lock.wait(until: deadline), head == items.count { return nil }
            }
            return takeHead()
        }
    }

    /// The oldest element if there is one, without waiting.
    package func tryPop() -> Element? {
        lock.withLock { head == items.count ? nil : takeHead() }
    }

    /// Removes and returns the head; the lock is held.
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
