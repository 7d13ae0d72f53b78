#if canImport(Glibc)
import Glibc
#endif

/// How a run stops early: at its deadline or on a signal, the work under way
/// cancelled and every URL not done answered so; a second signal gives up
/// what is still waiting.
extension ImageFetcher {
    /// Why the URLs not done are answered so: the deadline, or a signal.
    func stopped(_ url: String, _ run: FetchRun) -> FetchError {
        if let full = run.diskFull { return .cacheFull(url: url, full) }
        return run.deadlineReached ? .deadlineReached(url: url, seconds: settings.deadline ?? 0) : .interrupted(url: url)
    }

    /// A write found the cache's disk full: nothing more is downloaded (each image would be thrown
    /// away), as at a deadline: what is under way is cancelled, the rest of a list still read, its
    /// hits answered and its misses not tried.
    func reachFullDisk(_ run: inout FetchRun, _ error: SystemError) {
        guard run.diskFull == nil, !run.interrupted else { return }
        run.diskFull = error
        warn?("the cache's disk is full (\(error.reason)): no more downloads this run; the URLs not cached are not tried", nil)
        stopAll(&run, readingOn: true)
        run.writesDeadline = WallClock.monotonic()
    }

    /// The deadline came: what is under way is cancelled and what is left answered so, as for
    /// a signal, but the remote writes under way are not waited for, and the rest of a list is
    /// still read: every row gets its answer (a hit, or not done), as a table's rows must.
    func reachDeadline(_ run: inout FetchRun) {
        run.deadlineReached = true
        reachedDeadline = true
        warn?("the run's deadline (\(DownloadError.formatSeconds(settings.deadline ?? 0))) came: what is not done fails", nil)
        stopAll(&run, readingOn: true)
        run.writesDeadline = WallClock.monotonic()
    }

    /// Stops starting work and cancels the transfers; their answers (cancelled) still come. A
    /// list stops being read unless `readingOn`.
    func stopAll(_ run: inout FetchRun, readingOn: Bool = false) {
        run.interrupted = true
        if !readingOn {
            run.list?.stop()
            if run.list != nil { run.inputOpen = false }
        }
        // Queued before the cancellation, so that it reaches them too.
        submitQueued(&run)
        downloader?.cancelAll()
        remoteTier?.interrupt(droppingWrites: false)
        run.writesDeadline = WallClock.monotonic() + ImageFetcher.writesGracePeriod
        log?("interrupted: no new work is started")
    }

    /// A signal came: everything stops, the reading of a list too (which a deadline left going).
    func stopForSignal(_ run: inout FetchRun) {
        if !run.interrupted {
            stopAll(&run)
        } else if run.list != nil, run.inputOpen {
            run.list?.stop()
            run.inputOpen = false
        }
    }

    /// How long an interrupted run still waits for its remote writes.
    static let writesGracePeriod = 5.0

    /// An interrupted run waits only for its remote writes: they are finished
    /// within the grace period, or dropped when it has passed; either is said.
    /// The seconds left to wait (0 once they are dropped).
    func awaitWrites(_ run: inout FetchRun) -> Double {
        let left = (run.writesDeadline ?? 0) - WallClock.monotonic()
        if !run.awaitingWrites, !run.stoppedEarly {
            run.awaitingWrites = true
            // (How many: told at the end, once the queued ones not started are known.)
            warn?("interrupted: finishing the remote writes under way "
                  + "(at most \(DownloadError.formatSeconds(ImageFetcher.writesGracePeriod)); interrupt again to drop them)", nil)
        }
        guard left <= 0 else { return left }
        if run.stoppedEarly {
            warn?("\(Plural.count(run.pendingWrites, "remote write")) dropped at the run's \(run.deadlineReached ? "deadline" : "full disk")", nil)
        } else {
            warn?("interrupted: \(Plural.count(run.pendingWrites, "remote write")) dropped, not finished within "
                  + DownloadError.formatSeconds(ImageFetcher.writesGracePeriod), nil)
        }
        // The transfers still out stop when the fetcher closes; a Redis store stops waiting now. Each
        // dropped write counts as a remote error (its answer, if any, comes after the count).
        remoteTier?.statistics.errors += run.pendingWrites
        remoteTier?.interrupt(droppingWrites: true)
        run.pendingWrites = 0
        run.awaitingWrites = false
        run.writesDropped = true
        return 0
    }

    /// Variants are not waited for once the run is interrupted, as transfers are
    /// not: those not started are not made, and the images whose variants are
    /// being made are answered `interrupted` now (a worker's late answer is
    /// dropped; the process ends without waiting for it).
    func abandonVariants<E: Error>(_ run: inout FetchRun, emit: (FetchOutcome) throws(E) -> Void) throws(E) {
        let waiting = run.variants.waiting
        run.variants.waiting.removeAll()
        for job in waiting {
            guard let held = run.variants.finish(job.token, started: false) else { continue }
            try deliver(held.fingerprint, .failure(stopped(held.url, run)), first: held.first, url: held.url,
                        repeats: held.repeats, &run, emit: emit)
        }
        for token in Array(run.variants.pending.keys).sorted() {
            guard let held = run.variants.finish(token, started: true) else { continue }
            try deliver(held.fingerprint, .failure(stopped(held.url, run)), first: held.first, url: held.url,
                        repeats: held.repeats, &run, emit: emit)
        }
    }

    /// Asked to stop a second time: what has arrived is handled, and every
    /// URL still waiting (a transfer being cancelled, a remote store's answer)
    /// is answered `interrupted` now; remote writes still out are given up.
    /// The download thread removes what the cancelled transfers wrote when
    /// the fetcher closes.
    func abandonWaiting<E: Error>(_ run: inout FetchRun, emit: (FetchOutcome) throws(E) -> Void,
                                          update emitUpdate: (PrefetchUpdate) throws(E) -> Void) throws(E) {
        while let message = messages.tryPop() { try handle(message, &run, emit: emit, update: emitUpdate) }
        for slot in run.inFlight.slots {
            guard let miss = run.inFlight.remove(slot) else { continue }
            try settle(miss.fingerprint, .failure(stopped(miss.url, run)), first: miss.firstIndex, url: miss.url,
                       repeats: miss.repeats, &run, emit: emit)
        }
        try abandonVariants(&run, emit: emit)
        if run.pendingWrites > 0 { warn?("interrupted again: \(Plural.count(run.pendingWrites, "remote write")) dropped", nil) }
        // Each counts as a remote error, once (a late answer is not counted again).
        if !run.writesDropped { remoteTier?.statistics.errors += run.pendingWrites }
        remoteTier?.interrupt(droppingWrites: true)
        run.pendingWrites = 0
        run.writesDropped = true
        run.inputOpen = false
    }
}
