@testable import ImgCacheCore
import Testing

@Suite struct ByteSizeTests {
    @Test(arguments: [("4096", 4096), ("0", 0), ("500k", 500_000), ("500K", 500_000), ("500M", 500_000_000),
                      ("2G", 2_000_000_000), ("2GB", 2_000_000_000), ("1.5GiB", 1_610_612_736), ("1Ki", 1024),
                      ("20MiB", 20_971_520), ("1T", 1_000_000_000_000), ("12B", 12), (" 7M ", 7_000_000)])
    func parsesDecimalAndBinaryUnits(text: String, bytes: Int64) throws {
        #expect(try ByteSize(parsing: text).bytes == bytes)
    }

    @Test(arguments: ["", "M", "-5M", "1.5", "1.2.3M", "12X", ".5G", "5.G", "99999999999T", "1e3"])
    func refusesWhatIsNotASize(text: String) {
        #expect(throws: ValueError.self) { try ByteSize(parsing: text) }
    }

    @Test func humanisesWithDecimalUnits() {
        #expect(ByteSize.humanised(512) == "512 B")
        #expect(ByteSize.humanised(84_200_000) == "84.2 MB")
        #expect(ByteSize.humanised(1_000) == "1.0 kB")
        #expect(ByteSize.humanised(999_960) == "1.0 MB")
        #expect(ByteSize.humanised(1_500_000_000_000) == "1.5 TB")
    }
}

@Suite struct TimeSpanTests {
    @Test(arguments: [("45s", 45.0), ("30m", 1800), ("12h", 43_200), ("7d", 604_800), ("2w", 1_209_600),
                      ("500ms", 0.5), ("2.5", 2.5), ("15", 15)])
    func parsesEveryUnit(text: String, seconds: Double) throws {
        #expect(try TimeSpan(parsing: text).seconds == seconds)
    }

    @Test(arguments: ["", "s", "7days", "-1s", "1.2.3s", "soon"])
    func refusesWhatIsNotADuration(text: String) {
        #expect(throws: ValueError.self) { try TimeSpan(parsing: text) }
    }

    @Test func describesWithTheLargestWholeUnit() {
        #expect(TimeSpan(seconds: 604_800).description == "1w")
        #expect(TimeSpan(seconds: 86_400 * 3).description == "3d")
        #expect(TimeSpan(seconds: 5400).description == "90m")
        #expect(TimeSpan(seconds: 1.5).description == "1.5s")
    }
}

@Suite struct HTTPHeaderTests {
    @Test func parsesNameAndTrimmedValue() throws {
        #expect(try HTTPHeader(parsing: "X-Trace:  a b  ") == HTTPHeader(name: "X-Trace", value: "a b"))
        #expect(try HTTPHeader(parsing: "Accept:").removes)
    }

    @Test(arguments: ["NoColon", ": empty-name", "Bad Name: x", "X: a\r\nInjected: 1", "X: a\nb", "X: a\u{0}b", "Ümlaut: x"])
    func refusesUnsafeLines(line: String) {
        #expect(throws: ValueError.self) { try HTTPHeader(parsing: line) }
    }

    @Test func userHeadersReplaceOrRemoveTheDefaults() throws {
        var request = DownloadRequest(url: try RemoteURL(parsing: "http://h/a.png"), bodyDirectory: "/tmp")
        #expect(request.headerLines == ["Accept: image/*,*/*;q=0.8", "User-Agent: imgcache/\(ImgCache.version)"])
        request.headers = [HTTPHeader(name: "user-agent", value: "bot/1"), HTTPHeader(name: "Accept", value: "")]
        request.validators = Validators(etag: "\"v1\"", lastModified: "Sat, 21 Nov 2026 05:23:02 GMT")
        #expect(request.headerLines == ["user-agent: bot/1", "Accept:", "If-None-Match: \"v1\"",
                                        "If-Modified-Since: Sat, 21 Nov 2026 05:23:02 GMT"])
    }

    @Test func credentialsSplitAtTheFirstColonAndNeverDescribeThePassword() {
        let credentials = Credentials(parsing: "me:p:w")
        #expect(credentials == Credentials(user: "me", password: "p:w"))
        #expect(credentials?.description == "me:***")
        #expect(Credentials(parsing: "nocolon") == nil)
        #expect(Credentials(parsing: ":pw") == nil)
    }
}

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
        while let job = queue.popNext(order: order, isLive: { $0.live && $0.priority == $1 }) {
            names.append(job.name)
            job.live = false
        }
        return names
    }

    func filled(_ jobs: [Job]) -> DownloadQueue<Job> {
        var queue = DownloadQueue<Job>()
        for job in jobs { queue.push(job, priority: job.priority) }
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
        queue.push(c, priority: .high)
        #expect(drain(&queue, order: .fifo) == ["c", "a"])
    }

    @Test func aLongQueueDrainsInOrder() {
        let jobs = (0..<5000).map { Job(String($0)) }
        var queue = filled(jobs)
        #expect(drain(&queue, order: .fifo) == jobs.map(\.name))
    }
}

@Suite struct RetryPolicyTests {
    @Test func delaysGrowExponentiallyWithJitterUpToTheCap() {
        let policy = RetryPolicy()
        var generator = SystemRandomNumberGenerator()
        for retry in 1...12 {
            let full = min(policy.maximumDelay, policy.base * Double(1 << (retry - 1)))
            for _ in 0..<50 {
                let delay = policy.delay(beforeRetry: retry, retryAfter: nil, using: &generator)
                #expect(delay >= full / 2 && delay <= full)
            }
        }
    }

    @Test func retryAfterIsHonouredUpToItsCap() {
        let policy = RetryPolicy()
        var generator = SystemRandomNumberGenerator()
        #expect(policy.delay(beforeRetry: 1, retryAfter: 3, using: &generator) == 3)
        #expect(policy.delay(beforeRetry: 1, retryAfter: 3600, using: &generator) == policy.maximumRetryAfter)
    }

    @Test func onlyTransientNetworkAndServerFailuresAreRetried() {
        #expect(DownloadError.httpStatus(503).isRetryable && DownloadError.timeout(seconds: 1).isRetryable)
        #expect(DownloadError.connectionReset.isRetryable && DownloadError.httpStatus(429).isRetryable)
        #expect(!DownloadError.httpStatus(404).isRetryable && !DownloadError.tooLarge(limit: 1).isRetryable)
        #expect(!DownloadError.cancelled.isRetryable && !DownloadError.tooManyRedirects(limit: 10).isRetryable)
    }
}
