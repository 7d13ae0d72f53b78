import ImgCacheCore
import Synchronization

/// Threads that take misses (downloads, variants made) off the server's event loops, with a
/// queue of bounded length: a request that finds it full is answered 503 at once.
final class WorkPool: Sendable {
    private let queue = BlockingQueue<Job>()
    private let queued = Mutex(0)
    let queueLimit: Int
    let threads: Int

    /// A job, or the end of one thread.
    private enum Job: Sendable {
        case run(@Sendable () -> Void)
        case stop
    }

    init(threads: Int, queueLimit: Int) throws(SystemError) {
        self.threads = threads
        self.queueLimit = queueLimit
        for _ in 0..<threads {
            try WorkerThread.startDetached { [self] in
                while case .run(let job) = queue.pop() {
                    queued.withLock { $0 -= 1 }
                    job()
                }
            }
        }
    }

    /// Queues `job`; false when `queueLimit` jobs already wait beyond those running.
    func submit(_ job: @escaping @Sendable () -> Void) -> Bool {
        let taken = queued.withLock { count -> Bool in
            guard count < queueLimit else { return false }
            count += 1
            return true
        }
        if taken { queue.push(.run(job)) }
        return taken
    }

    /// Ends the threads after the jobs queued before.
    func close() {
        for _ in 0..<threads { queue.push(.stop) }
    }
}
