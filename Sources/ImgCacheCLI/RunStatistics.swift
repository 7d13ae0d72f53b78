import ImgCacheCore

/// `prefetch --stats FILE`: a run's numbers as one JSON object, for the
/// scripts that watch data set runs: answers by outcome and failures by
/// kind, bytes downloaded, each host's downloads and failures, time and rate.
/// Written when the run ends, however it ends.
struct RunStatistics {
    private var failures: [String: Int] = [:]
    private var hosts: [String: (downloaded: Int, failed: Int, bytes: Int64)] = [:]
    private var bytes: Int64 = 0

    /// Counts one answer (a repeat or another machine's entry has none).
    mutating func count(_ outcome: FetchOutcome) {
        guard let result = outcome.result else { return }
        // Each server apart, as --per-host counts them: two ports of one machine are two.
        let host = (try? RemoteURL(parsing: URLText.withoutFragment(outcome.url)))?.server ?? ""
        switch result {
        case .success(let fetched):
            if let downloaded = fetched.downloadedByteCount, fetched.cacheType == .downloaded || fetched.cacheType == .refreshed {
                bytes += downloaded
                if !host.isEmpty {
                    hosts[host, default: (0, 0, 0)].downloaded += 1
                    hosts[host, default: (0, 0, 0)].bytes += downloaded
                }
            }
        case .failure(.interrupted), .failure(.cacheFull):
            // Not a failure of the host's: the summary counts it as interrupted, or not tried.
            break
        case .failure(let error):
            failures[error.kind, default: 0] += 1
            if !host.isEmpty { hosts[host, default: (0, 0, 0)].failed += 1 }
        }
    }

    /// The object: the summary's counts, then these.
    func json(_ summary: PrefetchSummary, remotes: RemoteStatistics, seconds: Double, interrupted: Bool) -> JSONObject {
        var object = JSONObject()
        object.add("urls", summary.urls)
        object.add("downloaded", summary.downloaded)
        object.add("refreshed", summary.refreshed)
        object.add("cached", summary.cached)
        object.add("stale", summary.stale)
        object.add("remote", summary.fromRemotes)
        object.add("remote_writes", remotes.writes)
        object.add("remote_errors", remotes.errors)
        object.add("failed", summary.failed)
        object.add("blacklisted", summary.blacklisted)
        object.add("interrupted", summary.interrupted)
        object.add("not_tried", summary.notTried)
        object.add("repeats", summary.repeats)
        object.add("other_shards", summary.otherShards)
        var kinds = JSONObject()
        for (kind, count) in failures.sorted(by: { $0.key < $1.key }) { kinds.add(kind, count) }
        object.add("failures", .object(kinds))
        object.add("bytes_downloaded", bytes)
        var perHost = JSONObject()
        for (host, counts) in hosts.sorted(by: { $0.key < $1.key }) {
            var entry = JSONObject()
            entry.add("downloaded", counts.downloaded)
            entry.add("failed", counts.failed)
            entry.add("bytes", counts.bytes)
            perHost.add(host, .object(entry))
        }
        object.add("hosts", .object(perHost))
        object.add("seconds", JSONValue.number((seconds * 1000).rounded() / 1000))
        let answered = Double(summary.urls)
        object.add("urls_per_second", JSONValue.number(seconds > 0 ? (answered / seconds * 10).rounded() / 10 : 0))
        object.add("stopped_early", interrupted)
        object.add("peak_memory", WorkerRegistry.ownPeakMemory)
        object.add("decode_workers", WorkerRegistry.shared.startedCount)
        object.add("decode_peak_memory", WorkerRegistry.shared.workersPeakMemory)
        return object
    }
}
