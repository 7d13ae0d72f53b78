import Synchronization

/// Runs a piece of work per shard on up to `NamespaceScan.threadCount`
/// threads (a directory listing and a stat per file mostly wait on the
/// kernel, one core each), and returns the results in the shards' order.
enum ShardWorkers {
    static func map<Result: Sendable>(_ count: Int, _ work: @escaping @Sendable (Int) throws(SystemError) -> Result)
        throws(SystemError) -> [Result?] {
        let results = Mutex([Result?](repeating: nil, count: count))
        let failure = Mutex<SystemError?>(nil)
        let next = Atomic<Int>(0)
        let worker: @Sendable () -> Void = {
            while true {
                let index = next.add(1, ordering: .relaxed).oldValue
                guard index < count, failure.withLock({ $0 == nil }) else { return }
                do throws(SystemError) {
                    let result = try work(index)
                    results.withLock { $0[index] = result }
                } catch {
                    failure.withLock { $0 = $0 ?? error }
                }
            }
        }
        let helpers = (0..<max(0, min(count, NamespaceScan.threadCount) - 1)).map { _ in WorkerThread() }
        var started: [WorkerThread] = []
        for helper in helpers where (try? helper.start(worker)) != nil { started.append(helper) }
        worker()
        for helper in started { helper.join() }
        if let error = failure.withLock({ $0 }) { throw error }
        return results.withLock { $0 }
    }
}
