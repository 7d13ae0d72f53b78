/// Jobs waiting for a free transfer slot, in the order they should start:
/// higher lane first, then first-in or last-in first within a lane. The lanes
/// are the three priorities, with one below them all and one above them all
/// (`DownloadPlacement`).
///
/// Removal is lazy: a job that was cancelled stays in its lane and is skipped
/// when reached, so every operation is O(1) amortised even with 100,000 jobs waiting.
struct DownloadQueue<Job: AnyObject> {
    private var lanes: [Lane] = Array(repeating: Lane(), count: DownloadPriority.allCases.count + 2)

    /// The lane of a job with `priority` and `placement`.
    static func lane(_ priority: DownloadPriority, _ placement: DownloadPlacement = .byPriority) -> Int {
        switch placement {
        case .last: return 0
        case .byPriority: return 1 + priority.rawValue
        case .first: return 1 + DownloadPriority.allCases.count
        }
    }

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

    mutating func push(_ job: Job, lane: Int) {
        lanes[lane].items.append(job)
    }

    /// The next job to start; `isLive` says whether an entry found in a lane
    /// still belongs there (entries for which it is false are dropped).
    mutating func popNext(order: DownloadOrder, isLive: (Job, Int) -> Bool) -> Job? {
        for index in lanes.indices.reversed() {
            while !lanes[index].isEmpty {
                let job: Job
                switch order {
                case .fifo:
                    let lane = lanes[index]
                    job = lane.items[lane.head]
                    lanes[index].head += 1
                case .lifo:
                    job = lanes[index].items.removeLast()
                }
                lanes[index].compact()
                if isLive(job, index) { return job }
            }
        }
        return nil
    }
}
