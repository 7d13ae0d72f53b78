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
    /// Easy handles between transfers, kept for their connections and caches.
    private var idleHandles: [CurlEasy] = []
    private var cookieFileLoaded = false

    init(configuration: DownloadConfiguration) throws(DownloadError) {
        self.configuration = configuration
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
        while running.count < configuration.maximumConcurrentDownloads,
              let job = queue.popNext(order: configuration.order, isLive: { $0.isQueued && $0.lane == $1 }) {
            queuedCount -= 1
            start(job, now: now)
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
        switch transfer.outcome(code, request: job.request) {
        case .success(var response):
            response.attempts = job.attempts
            response.elapsed = now - (job.firstStart ?? now)
            finish(job, .success(DownloadedBody(body: transfer.sink.takeBody(), response: response)))
        case .failure(let error):
            transfer.discard()
            if error.isRetryable && job.attempts <= job.request.retries {
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
        return Int(timeout.rounded(.up))
    }
}
