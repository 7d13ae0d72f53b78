/// Answers that finish in any order, handed on in the order of their inputs:
/// each as soon as it and every one before it are known. Only answers
/// waiting for an earlier one are held.
struct ReorderBuffer<Element> {
    private var waiting: [Int: Element] = [:]
    /// The index of the next answer to hand on.
    private(set) var next = 0

    /// Keeps the answer of input `index`.
    mutating func insert(_ element: Element, at index: Int) {
        waiting[index] = element
    }

    /// Hands on, in order, every answer that now can be; how many.
    @discardableResult
    mutating func drain<E: Error>(_ deliver: (Int, Element) throws(E) -> Void) throws(E) -> Int {
        var delivered = 0
        while let ready = waiting.removeValue(forKey: next) {
            let index = next
            next += 1
            delivered += 1
            try deliver(index, ready)
        }
        return delivered
    }
}
