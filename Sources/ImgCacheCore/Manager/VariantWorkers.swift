#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The threads that make variants, each driving a decode worker process of
/// its own (which decodes, resizes and encodes) and storing what it made, so
/// that a prefetch of thumbnails uses every core while the manager's thread
/// goes on answering and downloading. Each job's answer comes back to the
/// manager as a message, with the `-v` lines it would have logged. How many run at once,
/// and how much memory they may take together, is the manager's to decide
/// (`VariantQueue`); the threads only take what they are given.
final class VariantWorkers: Sendable {
    /// One image whose variants are to be made from `original`.
    struct Job: Sendable {
        let token: Int
        let original: FetchResult
        /// The original's file, open since the job was queued (nil: opened when the job starts).
        var held: HeldOriginal? = nil
    }

    private let jobs = BlockingQueue<Job?>()
    private let threads: [WorkerThread]

    /// Starts `count` threads that make variants with `settings` in `cache` and post the answers to `messages`.
    init(count: Int, cache: DiskCache, settings: FetchSettings, logs: Bool,
         messages: BlockingQueue<FetchMessage>) throws(SystemError) {
        var started: [WorkerThread] = []
        for _ in 0..<max(1, count) {
            let thread = WorkerThread()
            try thread.start { [jobs] in
                // Each thread holds its own lock file open: byte locks belong to the open file.
                let lockHandle = NamespaceLock.Handle()
                // Started with the first job that decodes, ended with the thread.
                let decoder = DecodeWorkerProcess(limits: settings.decodeLimits)
                defer { decoder.close() }
                while let job = jobs.pop() {
                    let lines = LogLines()
                    let maker = VariantMaker(cache: cache, settings: settings, log: logs ? { lines.append($0) } : nil,
                                             lockHandle: lockHandle, decoder: decoder)
                    let answer = maker.answer(for: job.original, held: job.held)
                    messages.push(.variantsMade(token: job.token, answer, log: lines.collected))
                }
            }
            started.append(thread)
        }
        threads = started
    }

    func submit(_ job: Job) {
        jobs.push(job)
    }

    /// Lets every thread finish the job it has, then ends them; `waiting` false
    /// (a run stopped by a signal) does not wait for the jobs under way: the
    /// process is ending, and a variant cut short leaves only a temporary file,
    /// which the exit removes.
    func close(waiting: Bool = true) {
        for _ in threads { jobs.push(nil) }
        guard waiting else { return }
        for thread in threads { thread.join() }
    }

    /// How many threads a run uses: as many as downloads may run at once, no more than the cores.
    static func count(concurrency: Int) -> Int {
        // One more than the cores: each image goes to a decode worker and back, and while one
        // thread waits for its worker to wake (or to be woken), another's can use the core.
        let cores = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        return max(1, min(concurrency, (cores > 0 ? cores : 1) + 1))
    }
}

/// The `-v` lines of one job, gathered on its thread.
private final class LogLines: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var collected: [String] { lines.withLock { $0 } }
}
