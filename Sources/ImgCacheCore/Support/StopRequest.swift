import Synchronization

/// A request to stop, set from another thread (a signal watcher) and read
/// where a long job can stop cleanly: between the shards of a clean.
public final class StopRequest: Sendable {
    private let received = Atomic<Int32>(0)

    public init() {}

    /// Asks to stop because of `signal`; the first signal is the one kept.
    public func stop(signal: Int32) {
        _ = received.compareExchange(expected: 0, desired: signal, ordering: .relaxed)
    }

    /// The signal that asked to stop, if any.
    public var signal: Int32? {
        let value = received.load(ordering: .relaxed)
        return value == 0 ? nil : value
    }
}
