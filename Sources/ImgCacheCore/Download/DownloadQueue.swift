/// Jobs waiting for a free transfer slot, in the order they should start:
/// higher priority first, then first-in or last-in first within a priority.
///
/// Removal is lazy: a job that was cancelled stays in its lane and is skipped
/// when reached, so every operation is O(1) amortised even with 100,000 jobs waiting.
struct DownloadQueue<Job: AnyObject> {
    private var lanes: [Lane] = Array(repeating: Lane(), count: DownloadPriority.allCases.count)

    /// One priority's jobs, oldest at `head`.
    private struct Lane {
        var items: [Job] = []
        var head = 0

        var isEmpty: Bool { head == items.count }

        mutating func compact() {
            if head == items.count {
                items.removeAll(keepingCapacity: true)
                head = 0
            } else if head > 1024 && head * 2 > items.count {
                items.removeFirst(head)
                head = 0
            }
        }
    }

    mutating func push(_ job: Job, priority: DownloadPriority) {
        lanes[priority.rawValue].items.append(job)
    }

    /// The next job to start; `isLive` says whether an entry found in a lane
    /// still belongs there (entries for which it is false are dropped).
    mutating func popNext(order: DownloadOrder, isLive: (Job, DownloadPriority) -> Bool) -> Job? {
        for priority in DownloadPriority.allCases.reversed() {
            while !lanes[priority.rawValue].isEmpty {
                let job: Job
                switch order {
                case .fifo:
                    let lane = lanes[priority.rawValue]
                    job = lane.items[lane.head]
                    lanes[priority.rawValue].head += 1
                case .lifo:
                    job = lanes[priority.rawValue].items.removeLast()
                }
                lanes[priority.rawValue].compact()
                if isLive(job, priority) { return job }
            }
        }
        return nil
    }
}
