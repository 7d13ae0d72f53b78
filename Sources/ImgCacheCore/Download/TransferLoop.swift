import CImgCacheShims

/// Everything that runs on the download thread: the multi handle, the queue,
/// the running transfers and the jobs waiting to retry. Nothing here is
/// touched from another thread; `Downloader` talks to it through `Mailbox`.
final class TransferLoop {
    let configuration: DownloadConfiguration
    let multi: CurlMulti
    private let share: CurlShare?
    private let retryPolicy = RetryPolicy()
    private var random = SystemRandomNumberGenerator()

    private var queue = DownloadQueue<DownloadJob>()
    private var queuedCount = 0
    private var jobsByTicket: [DownloadTicket: DownloadJob] = [:]
    /// Running jobs by their easy handle's address.
    private var running: [UnsafeMutableRawPointer: DownloadJob] = [:]
    private var waitingToRetry: [DownloadJob] = []
    /// Per host: limits, pacing and hosts given up.
    private var politeness: HostPoliteness
    /// Jobs taken from the queue whose host could not have them yet, oldest first, by host.
    private var parked: [String: [DownloadJob]] = [:]
    /// Easy handles between transfers, kept for their connections and caches.
    private var idleHandles: [CurlEasy] = []
    private var cookieFileLoaded = false

    init(configuration: DownloadConfiguration) throws(DownloadError) {
        self.configuration = configuration
        politeness = HostPoliteness(concurrency: configuration.perHostConcurrency, rate: configuration.perHostRate,
                                    failuresToGiveUp: configuration.hostFailuresToGiveUp)
        multi = try CurlMulti()
        share = configuration.usesCookies ? try CurlShare() : nil
    }

    /// Runs until `mailbox` asks to close and nothing is left, then frees the handles.
    func run(_ mailbox: Mailbox) {
        while true {
            let mail = mailbox.collect()
            for (ticket, submission) in mail.submissions { accept(submission, ticket: ticket) }
            for ticket in mail.cancellations { cancel(ticket) }
            if mail.closing {
                for ticket in Array(jobsByTicket.keys) { cancel(ticket) }
            } else if mail.cancelEverything {
                // Writes under way are finished; those not started yet are not.
                for (ticket, job) in jobsByTicket where !(job.outlivesInterruption && job.isRunning) { cancel(ticket) }
            }
            if mail.closing && isIdle { break }

            var now = WallClock.monotonic()
            promoteDueRetries(now: now)
            startQueued(now: now)
            multi.perform()
            var anyFinished = false
            while let (handle, code) = multi.nextFinished() {
                now = WallClock.monotonic()
                complete(handle, code: code, now: now)
                anyFinished = true
            }
            // Freed slots are filled at once rather than after the next poll.
            if anyFinished { continue }
            multi.poll(milliseconds: pollTimeout(now: now))
        }
        mailbox.markClosed()
        idleHandles.removeAll()
    }

    private var isIdle: Bool { running.isEmpty && waitingToRetry.isEmpty && queuedCount == 0 }

    private func accept(_ submission: DownloadSubmission, ticket: DownloadTicket) {
        let job = DownloadJob(submission, ticket: ticket)
        jobsByTicket[ticket] = job
        queue.push(job, lane: job.lane)
        queuedCount += 1
    }

    /// Stops a job and answers it `cancelled`.
    private func cancel(_ ticket: DownloadTicket) {
        guard let job = jobsByTicket.removeValue(forKey: ticket) else { return }
        // The transfer stops (and its body file goes) before the answer, so that
        // whoever cancelled sees it gone.
        defer { job.finish(.failure(.cancelled)) }
        switch job.state {
        case .queued: queuedCount -= 1
        case .waitingToRetry: waitingToRetry.removeAll { $0 === job }
        case .running(let transfer):
            if let host = job.politeHost { politeness.stopped(host) }
            running.removeValue(forKey: transfer.easy.handle)
            multi.remove(transfer.easy)
            transfer.discard()
            idleHandles.append(transfer.easy)
        case .finished: break
        }
    }

    private func promoteDueRetries(now: Double) {
        guard !waitingToRetry.isEmpty else { return }
        waitingToRetry.removeAll { job in
            guard case .waitingToRetry(let until) = job.state, until <= now else { return false }
            job.state = .queued
            queue.push(job, lane: job.lane)
            queuedCount += 1
            return true
        }
    }

    private func startQueued(now: Double) {
        while running.count < configuration.maximumConcurrentDownloads, let job = nextStartable(now: now) {
            queuedCount -= 1
            if let host = job.politeHost { politeness.started(host, now: now) }
            start(job, now: now)
        }
    }

    /// The next job that may start now: a parked one whose host is free again first, then the
    /// queue's next; a job whose host is busy or paced is parked, one whose host was given up
    /// is answered at once.
    private func nextStartable(now: Double) -> DownloadJob? {
        for (host, jobs) in parked where (politeness.earliestStart(host, now: now) ?? .infinity) <= now {
            var rest = jobs[...]
            while let job = rest.popFirst() {
                guard job.isQueued else { continue }
                parked[host] = rest.isEmpty ? nil : Array(rest)
                return job
            }
            parked[host] = nil
        }
        while let job = queue.popNext(order: configuration.order, isLive: { $0.isQueued && $0.lane == $1 }) {
            guard let host = job.politeHost else { return job }
            if let failure = politeness.givenUp(host) {
                queuedCount -= 1
                finish(job, .failure(failure))
                continue
            }
            if parked[host] == nil, (politeness.earliestStart(host, now: now) ?? .infinity) <= now { return job }
            parked[host, default: []].append(job)
        }
        return nil
    }

    /// `host` was given up: its parked jobs are answered now (queued ones when they come up).
    private func answerGivenUp(_ host: String) {
        guard let failure = politeness.givenUp(host) else { return }
        for job in parked.removeValue(forKey: host) ?? [] where job.isQueued {
            queuedCount -= 1
            finish(job, .failure(failure))
        }
    }

    private func start(_ job: DownloadJob, now: Double) {
        let easy: CurlEasy
        let transfer: Transfer
        do throws(DownloadError) {
            if let idle = idleHandles.popLast() { easy = idle } else { easy = try CurlEasy() }
            do {
                transfer = try Transfer(request: job.request, easy: easy, configuration: configuration, share: share)
            } catch {
                idleHandles.append(easy)
                throw error
            }
            if configuration.usesCookies, !cookieFileLoaded {
                // Loaded once into the shared store; loading it again would undo cookies received since.
                // An empty name turns the cookie engine on without reading a file.
                try easy.set(CURLOPT_COOKIEFILE, configuration.cookieJar ?? "")
                cookieFileLoaded = true
            }
            if job.wantsEvents { attachProgress(job, to: transfer) }
            do {
                try multi.add(easy)
            } catch {
                transfer.discard()
                idleHandles.append(easy)
                throw error
            }
        } catch {
            finish(job, .failure(error))
            return
        }
        job.attempts += 1
        if job.firstStart == nil {
            job.firstStart = now
            job.notify(.started)
        }
        job.state = .running(transfer)
        running[easy.handle] = job
    }

    private func attachProgress(_ job: DownloadJob, to transfer: Transfer) {
        transfer.sink.onProgress = { [weak job] received, expected in
            job?.notify(.progress(received: received, expected: expected))
        }
    }

    private func complete(_ handle: UnsafeMutableRawPointer, code: CURLcode, now: Double) {
        guard let job = running.removeValue(forKey: handle), case .running(let transfer) = job.state else { return }
        multi.remove(transfer.easy)
        idleHandles.append(transfer.easy)
        let outcome = transfer.outcome(code, request: job.request)
        if let host = job.politeHost {
            let failure: DownloadError? = if case .failure(let error) = outcome { error } else { nil }
            if politeness.ended(host, failure: failure) { answerGivenUp(host) }
        }
        switch outcome {
        case .success(var response):
            response.attempts = job.attempts
            response.elapsed = now - (job.firstStart ?? now)
            finish(job, .success(DownloadedBody(body: transfer.sink.takeBody(), response: response)))
        case .failure(let error):
            transfer.discard()
            if error.isRetryable && job.attempts <= job.request.retries && !(job.politeHost.map { politeness.givenUp($0) != nil } ?? false) {
                let delay = retryPolicy.delay(beforeRetry: job.attempts, retryAfter: transfer.sink.retryAfter, using: &random)
                job.state = .waitingToRetry(until: now + delay)
                waitingToRetry.append(job)
                job.notify(.retrying(attempt: job.attempts, of: job.request.retries, delay: delay, error: error))
            } else {
                finish(job, .failure(error))
            }
        }
    }

    private func finish(_ job: DownloadJob, _ result: Result<DownloadedBody, DownloadError>) {
        jobsByTicket.removeValue(forKey: job.ticket)
        job.finish(result)
    }

    /// Milliseconds the next poll may sleep: until the earliest retry is due, at most a second
    /// (libcurl shortens it further for its own timers).
    private func pollTimeout(now: Double) -> Int {
        var timeout = 1000.0
        for job in waitingToRetry {
            if case .waitingToRetry(let until) = job.state { timeout = min(timeout, max(0, (until - now) * 1000)) }
        }
        // A paced host's next turn (a busy one's comes with a finished transfer, which wakes the poll).
        for host in parked.keys {
            if let start = politeness.earliestStart(host, now: now) { timeout = min(timeout, max(0, (start - now) * 1000)) }
        }
        return Int(timeout.rounded(.up))
    }
}
