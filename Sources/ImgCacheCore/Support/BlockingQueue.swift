#if canImport(Glibc)
import Glibc
#endif

/// A first-in first-out queue that one thread waits on while others fill it:
/// how results cross from the download thread to the thread that stores and
/// prints them.
package final class BlockingQueue<Element: Sendable>: Sendable {
    private struct Items {
        var elements: [Element] = []
        var head = 0
        var isEmpty: Bool { head == elements.count }

        /// Removes and returns the head.
        mutating func takeHead() -> Element {
            let element = elements[head]
            head += 1
            if head == elements.count || head > 1024 && head * 2 > elements.count {
                elements.removeFirst(head)
                head = 0
            }
            return element
        }
    }

    private let items = ConditionLock(Items())

    package init() {}

    /// Adds an element and wakes a waiting thread.
    package func push(_ element: Element) {
        items.withLock { $0.elements.append(element) }
        items.signal()
    }

    /// The oldest element, waiting for one if the queue is empty.
    package func pop() -> Element {
        items.wait(until: { !$0.isEmpty }) { $0.takeHead() }
    }

    /// The oldest element, waiting at most `timeout` seconds for one.
    package func pop(timeout: Double) -> Element? {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let total = Int(now.tv_nsec) + Int(timeout * 1e9)
        let deadline = timespec(tv_sec: now.tv_sec + total / 1_000_000_000, tv_nsec: total % 1_000_000_000)
        return items.wait(until: { !$0.isEmpty }, deadline: deadline) { $0.takeHead() }
    }

    /// The oldest element if there is one, without waiting.
    package func tryPop() -> Element? {
        items.withLock { $0.isEmpty ? nil : $0.takeHead() }
    }
}
