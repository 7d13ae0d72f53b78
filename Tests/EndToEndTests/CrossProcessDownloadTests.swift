import Foundation
import Testing

/// Processes sharing a cache never download one URL at the same time: the
/// second waits for the first through a lock in the cache, and a holder that
/// dies (SIGKILL) or takes longer than the timeout does not hold it up.
@Suite final class CrossProcessDownloadTests: FaultServerSuite {
    let work: TemporaryDirectory

    override init() throws {
        work = try TemporaryDirectory("imgcache-shared-downloads")
        try super.init()
    }

    /// Waits (at most 10 s) until `condition` holds.
    func waitUntil(_ condition: () -> Bool) {
        for _ in 0..<2000 where !condition() { usleep(5_000) }
    }

    /// `count` imgcache processes started at once on the shared cache, their output captured.
    func startAll(_ count: Int, _ arguments: [String]) throws -> [(Process, TemporaryDirectory)] {
        try (0..<count).map { _ in
            let outputs = try TemporaryDirectory("imgcache-shared-run")
            return (try ImgCacheProcess.startCapturing(["--cache-dir", cacheRoot] + arguments, home: home.path, outputs: outputs), outputs)
        }
    }

    @Test func twoPrefetchesOfOneListDownloadEachURLOnce() throws {
        // Each image is answered only when two requests wait at the gate together: two runs
        // downloading the same URLs at once would both be answered, twice each.
        let urls = ["photo.jpg", "logo.png", "gray.jpg", "alpha.webp"].map { faults.baseURL + "/gate/2/" + $0 }
        let list = try work.write(lines: urls)
        for (process, outputs) in try startAll(2, ["--json", "prefetch", "-j", "4", list]) {
            let result = try ImgCacheProcess.result(of: process, outputs: outputs)
            #expect(result.status == 0, "\(result.standardError)")
        }
        #expect(faults.requests.count == 4, "\(faults.requests.map(\.path))")
    }

    @Test func variantsAreMadeWhileAnotherProcessClearsTheCache() throws {
        // Each clear may remove an original between its store (or hit) and its variants being made:
        // that image is looked up again and downloaded again, never failed.
        let urls = (0..<80).map { faults.baseURL + "/delay/5/photo.jpg?n=\($0)" }
        let outputs = try TemporaryDirectory("imgcache-variants-cleared")
        let run = try ImgCacheProcess.startCapturing(["--cache-dir", cacheRoot, "--json", "prefetch", "-j", "4", "--thumbnail", "8x8",
                                                      try work.write(lines: urls)], home: home.path, outputs: outputs)
        var clears = 0
        while run.isRunning, clears < 300 {
            _ = try ImgCacheProcess.run(["--cache-dir", cacheRoot, "-q", "clear"], home: home.path)
            clears += 1
        }
        let result = try ImgCacheProcess.result(of: run, outputs: outputs)
        #expect(result.status == 0, "after \(clears) clears: \(result.standardError)")
        #expect(!result.standardError.contains("went away"), "\(result.standardError)")
    }

    @Test func aPrefetchWhoseWholeReadAheadWaitsForAnotherProcessGoesOnToTheRest() throws {
        // The first run locks its whole read-ahead (256 URLs) and downloads them a few at a time;
        // the second finds every one of its first 256 URLs locked, waits, is answered by the
        // first run's downloads, and must then read the rest of its list.
        let urls = (0..<300).map { faults.baseURL + "/delay/1/photo.jpg?n=\($0)" }
        let list = try work.write(lines: urls)
        let firstOutputs = try TemporaryDirectory("imgcache-shared-first")
        let first = try ImgCacheProcess.startCapturing(["--cache-dir", cacheRoot, "-q", "prefetch", "-j", "4", list],
                                                      home: home.path, outputs: firstOutputs)
        waitUntil { faults.requests.count >= 1 }
        let secondOutputs = try TemporaryDirectory("imgcache-shared-second")
        let second = try ImgCacheProcess.startCapturing(["--cache-dir", cacheRoot, "--json", "prefetch", "-j", "6", list],
                                                       home: home.path, outputs: secondOutputs)
        let waiter = try ImgCacheProcess.result(of: second, outputs: secondOutputs, limit: 60)
        let holder = try ImgCacheProcess.result(of: first, outputs: firstOutputs, limit: 60)
        #expect(holder.status == 0, "\(holder.standardError)")
        #expect(waiter.status == 0, "\(waiter.standardError.suffix(400))")
        let summary = waiter.lines.last ?? ""
        #expect(summary.contains("\"urls\":300"), "\(summary)")
        #expect(faults.requests.count == 300, "\(faults.requests.count) requests")
    }

    /// A holder downloading `url` from a stalling route, and a second fetch of it with `limit`
    /// (waiting for the holder): whether the waiter ended within 10 s, its status and its errors.
    func waitForStalledHolder(_ url: String, waiterLimit limit: [String]) throws -> (ended: Bool, status: Int32, errors: String) {
        let holder = try ImgCacheProcess.start(["--cache-dir", cacheRoot, "-q", "fetch", "--timeout", "20", url], home: home.path)
        defer { kill(holder.processIdentifier, SIGKILL); holder.waitUntilExit() }
        waitUntil { faults.requests.count >= 1 }
        let outputs = try TemporaryDirectory("imgcache-limited-wait")
        let waiter = try ImgCacheProcess.startCapturing(["--cache-dir", cacheRoot, "fetch"] + limit + [url], home: home.path, outputs: outputs)
        waitUntil { !waiter.isRunning }
        let ended = !waiter.isRunning
        if !ended { kill(waiter.processIdentifier, SIGKILL) }
        waiter.waitUntilExit()
        let errors = (try? String(contentsOfFile: outputs.appending("stderr"), encoding: .utf8)) ?? ""
        return (ended, waiter.terminationStatus, errors)
    }

    /// A run waiting for another process's download ends at its deadline: the URL fails as not done
    /// in time, and the run exits (it used to wait for a message that never came).
    @Test func aWaitForAnotherProcessEndsAtTheDeadline() throws {
        let waited = try waitForStalledHolder(faults.baseURL + "/stall?deadline", waiterLimit: ["--deadline", "1"])
        #expect(waited.ended, "still waiting 10 s after its deadline of 1 s")
        #expect(waited.status == 1 && waited.errors.contains("not done within the run's 1 s (--deadline)"), "\(waited.status) \(waited.errors)")
        #expect(faults.requests.count == 1)
    }

    /// `-m` bounds the whole request, as curl's does, the wait for another process's download of it
    /// included: a waiter on a stalled URL ends at its own limit, not after the holder gives up.
    @Test func maxTimeBoundsTheWaitForAnotherProcess() throws {
        let waited = try waitForStalledHolder(faults.baseURL + "/stall?max-time", waiterLimit: ["-m", "1"])
        #expect(waited.ended, "still waiting 10 s past its -m 1")
        #expect(waited.status == 1 && waited.errors.contains("not finished within 1 s (the maximum time)"), "\(waited.status) \(waited.errors)")
        #expect(faults.requests.count == 1)
    }

    @Test func aURLFarDownAnotherRunsQueueIsNotWaitedFor() throws {
        // A prefetch downloading one slow image at a time has 20 queued; a fetch of its 15th
        // is not held up by it (only what is about to be downloaded is locked).
        let urls = (0..<20).map { faults.baseURL + "/delay/300/logo.png?n=\($0)" }
        let list = try work.write(lines: urls)
        let holder = try ImgCacheProcess.start(["--cache-dir", cacheRoot, "-q", "prefetch", "-j", "1", list], home: home.path)
        defer { kill(holder.processIdentifier, SIGKILL); holder.waitUntilExit() }
        waitUntil { faults.requests.count >= 1 }
        let result = try fetch(["-v", "fetch", "--timeout", "5", urls[14]])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(!result.standardError.contains("another process"), "\(result.standardError)")
        #expect(faults.requests.filter { $0.target.hasSuffix("?n=14") }.count == 1)
    }

    @Test func aHolderKilledWithSIGKILLLetsTheWaiterDownload() throws {
        let url = faults.baseURL + "/stall-once/photo.jpg"
        let holder = try ImgCacheProcess.start(["--cache-dir", cacheRoot, "fetch", url], home: home.path)
        waitUntil { faults.requests.count == 1 }
        let outputs = try TemporaryDirectory("imgcache-waiter")
        let waiter = try ImgCacheProcess.startCapturing(["--cache-dir", cacheRoot, "-v", "fetch", url], home: home.path, outputs: outputs)
        waitUntil { ((try? String(contentsOfFile: outputs.appending("stderr"), encoding: .utf8)) ?? "").contains("another process") }
        #expect(faults.requests.count == 1, "the waiter did not download meanwhile")
        kill(holder.processIdentifier, SIGKILL)
        holder.waitUntilExit()
        let result = try ImgCacheProcess.result(of: waiter, outputs: outputs)
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardError.contains("being downloaded by another process; waiting for it"))
        #expect(faults.requests.count == 2)
        #expect(FileManager.default.contents(atPath: result.lines.first ?? "") == (try Paths.fixture("photo.jpg")))
    }

    /// A slow transfer that keeps receiving is waited for however long it takes, not downloaded
    /// again after the waiters' timeout: three processes, one request.
    @Test func aSlowHealthyTransferIsWaitedForAndDownloadedOnce() throws {
        let url = faults.baseURL + "/slow-drip/7/photo.jpg"
        let holderOutputs = try TemporaryDirectory("imgcache-holder")
        let holder = try ImgCacheProcess.startCapturing(["--cache-dir", cacheRoot, "-v", "fetch", "--timeout", "3", url], home: home.path,
                                                        outputs: holderOutputs)
        waitUntil { faults.requests.count == 1 }
        let waiters = try startAll(2, ["-v", "fetch", "--timeout", "3", url])
        let held = try ImgCacheProcess.result(of: holder, outputs: holderOutputs)
        #expect(held.status == 0, "\(held.standardError)")
        for (waiter, outputs) in waiters {
            let result = try ImgCacheProcess.result(of: waiter, outputs: outputs)
            #expect(result.status == 0, "\(result.standardError)")
            #expect(!result.standardError.contains("downloading it here too"), "\(result.standardError)")
            #expect(FileManager.default.contents(atPath: result.lines.first ?? "") == (try Paths.fixture("photo.jpg")))
        }
        #expect(faults.requests.count == 1, "\(faults.requests.count) downloads")
        #expect(CacheInspection.temporaryFiles(under: cacheRoot).isEmpty)
    }

    /// Waiters that give up on a stalled holder do not all download: the first takes it over, the
    /// others wait for that one (two requests in all: the stalled one, and the deputy's).
    @Test func oneWaiterTakesOverAStalledDownloadForTheOthers() throws {
        let url = faults.baseURL + "/stall-once/sticker.webp"
        let holder = try ImgCacheProcess.start(["--cache-dir", cacheRoot, "fetch", "--timeout", "60", url], home: home.path)
        defer { kill(holder.processIdentifier, SIGKILL); holder.waitUntilExit() }
        waitUntil { faults.requests.count == 1 }
        for (waiter, outputs) in try startAll(2, ["-v", "fetch", "--timeout", "1", url]) {
            let result = try ImgCacheProcess.result(of: waiter, outputs: outputs)
            #expect(result.status == 0, "\(result.standardError)")
            #expect(FileManager.default.contents(atPath: result.lines.first ?? "") == (try Paths.fixture("sticker.webp")))
        }
        #expect(faults.requests.count == 2, "\(faults.requests.count) requests")
    }

    @Test func aHolderSlowerThanTheTimeoutIsNotWaitedForLonger() throws {
        let url = faults.baseURL + "/stall-once/logo.png"
        let holder = try ImgCacheProcess.start(["--cache-dir", cacheRoot, "fetch", "--timeout", "60", url], home: home.path)
        defer { kill(holder.processIdentifier, SIGKILL); holder.waitUntilExit() }
        waitUntil { faults.requests.count == 1 }
        let result = try fetch(["-v", "fetch", "--timeout", "1", url])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardError.contains("still being downloaded by another process, with no progress for 1 s; downloading it here too"),
                "\(result.standardError)")
        #expect(faults.requests.count == 2)
    }
}
