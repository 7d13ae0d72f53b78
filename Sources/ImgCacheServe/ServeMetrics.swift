import Synchronization

/// What the server has done since it started, as Prometheus's text format shows it at
/// `/metrics`: requests by status, their latency, answers by tier, origin fetches, busy workers.
public final class ServeMetrics: Sendable {
    /// Where an image answer came from.
    public enum Tier: String, Sendable, CaseIterable {
        case memory, disk, made, notModified = "not_modified"
    }

    /// The latency histogram's bounds, in seconds.
    public static let bounds: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    private struct State {
        var byStatus: [Int: Int] = [:]
        var buckets = [Int](repeating: 0, count: ServeMetrics.bounds.count)
        var latencySum = 0.0
        var latencyCount = 0
        var tiers: [String: Int] = [:]
        var originFetches = 0
        var originFailures = 0
        var workersBusy = 0
        var queued = 0
        var connections = 0
        var refusedBusy = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// A request answered with `status` after `seconds`.
    public func answered(status: Int, seconds: Double) {
        state.withLock { state in
            state.byStatus[status, default: 0] += 1
            for (index, bound) in ServeMetrics.bounds.enumerated() where seconds <= bound { state.buckets[index] += 1 }
            state.latencySum += seconds
            state.latencyCount += 1
        }
    }

    public func served(from tier: Tier) { state.withLock { $0.tiers[tier.rawValue, default: 0] += 1 } }

    public func originFetched(failed: Bool) {
        state.withLock { state in
            state.originFetches += 1
            if failed { state.originFailures += 1 }
        }
    }

    public func workers(busyChange: Int, queuedChange: Int) {
        state.withLock { state in
            state.workersBusy += busyChange
            state.queued += queuedChange
        }
    }

    public func connections(change: Int) { state.withLock { $0.connections += change } }
    public func refusedForBusy() { state.withLock { $0.refusedBusy += 1 } }

    /// Requests answered so far, whatever their status.
    public var requestCount: Int { state.withLock { $0.latencyCount } }

    /// The text `/metrics` answers, with the memory tier's usage.
    public func text(memory: (bytes: Int, count: Int), memoryBudget: Int) -> String {
        state.withLock { state in
            var lines: [String] = []
            lines.append("# HELP imgcache_serve_requests_total Requests answered, by HTTP status.")
            lines.append("# TYPE imgcache_serve_requests_total counter")
            for status in state.byStatus.keys.sorted() {
                lines.append("imgcache_serve_requests_total{status=\"\(status)\"} \(state.byStatus[status]!)")
            }
            lines.append("# HELP imgcache_serve_request_duration_seconds Time from a request's head to its answer.")
            lines.append("# TYPE imgcache_serve_request_duration_seconds histogram")
            for (index, bound) in ServeMetrics.bounds.enumerated() {
                lines.append("imgcache_serve_request_duration_seconds_bucket{le=\"\(bound)\"} \(state.buckets[index])")
            }
            lines.append("imgcache_serve_request_duration_seconds_bucket{le=\"+Inf\"} \(state.latencyCount)")
            lines.append("imgcache_serve_request_duration_seconds_sum \(state.latencySum)")
            lines.append("imgcache_serve_request_duration_seconds_count \(state.latencyCount)")
            lines.append("# HELP imgcache_serve_answers_total Image answers, by where they came from.")
            lines.append("# TYPE imgcache_serve_answers_total counter")
            for tier in Tier.allCases { lines.append("imgcache_serve_answers_total{tier=\"\(tier.rawValue)\"} \(state.tiers[tier.rawValue] ?? 0)") }
            lines.append("# HELP imgcache_serve_origin_fetches_total Requests that needed the origin (a download or its wait).")
            lines.append("# TYPE imgcache_serve_origin_fetches_total counter")
            lines.append("imgcache_serve_origin_fetches_total \(state.originFetches)")
            lines.append("# HELP imgcache_serve_origin_failures_total Of those, the ones that failed.")
            lines.append("# TYPE imgcache_serve_origin_failures_total counter")
            lines.append("imgcache_serve_origin_failures_total \(state.originFailures)")
            lines.append("# HELP imgcache_serve_workers_busy Workers fetching or making a variant now.")
            lines.append("# TYPE imgcache_serve_workers_busy gauge")
            lines.append("imgcache_serve_workers_busy \(state.workersBusy)")
            lines.append("# HELP imgcache_serve_queue_length Misses waiting for a worker.")
            lines.append("# TYPE imgcache_serve_queue_length gauge")
            lines.append("imgcache_serve_queue_length \(state.queued)")
            lines.append("# HELP imgcache_serve_busy_refusals_total Requests answered 503 because the queue was full.")
            lines.append("# TYPE imgcache_serve_busy_refusals_total counter")
            lines.append("imgcache_serve_busy_refusals_total \(state.refusedBusy)")
            lines.append("# HELP imgcache_serve_connections Open client connections.")
            lines.append("# TYPE imgcache_serve_connections gauge")
            lines.append("imgcache_serve_connections \(state.connections)")
            lines.append("# HELP imgcache_serve_memory_bytes Bytes of variants held in memory, of the budget.")
            lines.append("# TYPE imgcache_serve_memory_bytes gauge")
            lines.append("imgcache_serve_memory_bytes \(memory.bytes)")
            lines.append("imgcache_serve_memory_budget_bytes \(memoryBudget)")
            lines.append("imgcache_serve_memory_items \(memory.count)")
            return lines.joined(separator: "\n") + "\n"
        }
    }
}
