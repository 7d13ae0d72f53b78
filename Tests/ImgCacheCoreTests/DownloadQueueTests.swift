@testable import ImgCacheCore
import Testing

@Suite struct DownloadQueueTests {
    final class Job {
        let name: String
        var live = true
        var priority: DownloadPriority
        init(_ name: String, _ priority: DownloadPriority = .normal) {
            self.name = name
            self.priority = priority
        }
    }

    func drain(_ queue: inout DownloadQueue<Job>, order: DownloadOrder) -> [String] {
        var names: [String] = []
        while let job = queue.popNext(order: order, isLive: { $0.live && DownloadQueue<Job>.lane($0.priority) == $1 }) {
            names.append(job.name)
            job.live = false
        }
        return names
    }

    func filled(_ jobs: [Job]) -> DownloadQueue<Job> {
        var queue = DownloadQueue<Job>()
        for job in jobs { queue.push(job, lane: DownloadQueue<Job>.lane(job.priority)) }
        return queue
    }

    @Test func fifoTakesTheOldestAndLifoTheNewest() {
        let names = ["a", "b", "c", "d"]
        var fifo = filled(names.map { Job($0) })
        #expect(drain(&fifo, order: .fifo) == names)
        var lifo = filled(names.map { Job($0) })
        #expect(drain(&lifo, order: .lifo) == names.reversed())
    }

    @Test func priorityComesBeforeOrder() {
        let jobs = [Job("l1", .low), Job("n1"), Job("h1", .high), Job("n2"), Job("h2", .high), Job("l2", .low)]
        var fifo = filled(jobs)
        #expect(drain(&fifo, order: .fifo) == ["h1", "h2", "n1", "n2", "l1", "l2"])
        for job in jobs { job.live = true }
        var lifo = filled(jobs)
        #expect(drain(&lifo, order: .lifo) == ["h2", "h1", "n2", "n1", "l2", "l1"])
    }

    @Test func cancelledAndRaisedJobsAreSkippedWhereTheyNoLongerBelong() {
        let a = Job("a", .low), b = Job("b", .low), c = Job("c", .low)
        var queue = filled([a, b, c])
        b.live = false
        c.priority = .high
        queue.push(c, lane: DownloadQueue<Job>.lane(.high))
        #expect(drain(&queue, order: .fifo) == ["c", "a"])
    }

    @Test func aLongQueueDrainsInOrder() {
        let jobs = (0..<5000).map { Job(String($0)) }
        var queue = filled(jobs)
        #expect(drain(&queue, order: .fifo) == jobs.map(\.name))
    }
}
