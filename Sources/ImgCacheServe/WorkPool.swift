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
        case run(@Sendable (WorkerContext) -> Void)
        case stop
    }

    /// What a thread keeps from one job to the next: its decode worker process (started with
    /// its first variant, so that later ones start none) and its open lock file.
    final class WorkerContext {
        let decoder: DecodeWorkerProcess
        let lockHandle = NamespaceLock.Handle()

        init(limits: DecodeLimits) {
            decoder = DecodeWorkerProcess(limits: limits)
        }
    }

    init(threads: Int, queueLimit: Int, limits: DecodeLimits) throws(SystemError) {
        self.threads = threads
        self.queueLimit = queueLimit
        for _ in 0..<threads {
            try WorkerThread.startDetached { [self] in
                let context = WorkerContext(limits: limits)
                defer { context.decoder.close() }
                while case .run(let job) = queue.pop() {
                    queued.withLock { $0 -= 1 }
                    job(context)
                }
            }
        }
    }

    /// Queues `job`; false when `queueLimit` jobs already wait beyond those running.
    func submit(_ job: @escaping @Sendable (WorkerContext) -> Void) -> Bool {
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
