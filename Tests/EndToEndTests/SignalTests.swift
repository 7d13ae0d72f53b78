import Foundation
import ImgCacheCore
import Testing

/// What scripts rely on when they stop a run: SIGINT and SIGTERM, even two at
/// once or a second while the first is handled, end it with 130 or 143, print
/// the answers finished so far and the summary, and leave no temporary file
/// in the cache.
@Suite final class SignalTests: FaultServerSuite {
    let work: TemporaryDirectory

    override init() throws {
        work = try TemporaryDirectory("imgcache-signals")
        try super.init()
    }

    /// Three rounds of a prefetch of three endless bodies, each stopped by
    /// `signals` (sent in order) once every body holds a temporary file (at
    /// -j 256 a transfer keeps 256 KiB in memory; the wait is bounded); each
    /// round must leave no temporary file behind. The rounds' results.
    func stalledPrefetches(stoppedBy signals: [Int32], json: Bool = false) throws -> [RunResult] {
        try (0..<3).map { round in
            let outputs = try TemporaryDirectory("imgcache-signal")
            let stalls = (0..<3).map { faults.baseURL + "/endless?round=\(round)&n=\($0)" }
            let process = try ImgCacheProcess.startCapturing(["--cache-dir", cacheRoot] + (json ? ["--json"] : [])
                                                             + ["prefetch", "-j", "256", try work.write(lines: stalls)],
                                                             home: home.path, outputs: outputs)
            for _ in 0..<1000 where CacheInspection.temporaryFiles(under: cacheRoot).count < 3 { usleep(5_000) }
            #expect(CacheInspection.temporaryFiles(under: cacheRoot).count == 3)
            for signal in signals { kill(process.processIdentifier, signal) }
            let result = try ImgCacheProcess.result(of: process, outputs: outputs)
            #expect(CacheInspection.temporaryFiles(under: cacheRoot).isEmpty, "round \(round): \(result.standardError)")
            return result
        }
    }

    @Test func twoSignalsAtOnceLeaveNoTemporaryFileAndKeepTheSummary() throws {
        // What `timeout -s INT` does: the signal to the process, then to its group.
        for result in try stalledPrefetches(stoppedBy: [SIGINT, SIGINT], json: true) {
            #expect(result.status == 130, "\(result.standardError)")
            let lines = try result.jsonLines()
            #expect(lines.count == 4, "\(result.output)")
            #expect(lines.dropLast().allSatisfy { ($0["error"] as? String)?.contains("interrupted") == true })
            #expect(lines.last?["summary"] as? Bool == true)
            #expect(lines.last?["interrupted"] as? Int == 3)
            #expect(!result.standardError.contains("stopped at once"))
        }
    }

    @Test func aSecondSignalWhileTheFirstIsHandledStillPrintsTheSummary() throws {
        // Stopped, both signals are pending together: the watcher takes SIGINT
        // first and SIGTERM right after, while the first is being handled.
        for result in try stalledPrefetches(stoppedBy: [SIGSTOP, SIGINT, SIGTERM, SIGCONT]) {
            #expect(result.status == 130, "\(result.standardError)")
            #expect(result.output.contains("3 URLs: 0 downloaded"), "\(result.output)")
            #expect(result.output.contains("3 interrupted"))
            #expect(result.standardError.contains("interrupted by SIGINT"))
        }
    }
}
