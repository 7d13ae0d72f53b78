/// How long to wait before trying a transient failure again: exponential
/// backoff with jitter, so that many clients hit by the same outage do not
/// come back in step. A server's `Retry-After` is honoured up to a cap.
public struct RetryPolicy: Equatable, Sendable {
    /// Delay before the first retry, before jitter.
    public var base = 0.25
    /// Longest backoff delay.
    public var maximumDelay = 10.0
    /// Longest wait a `Retry-After` header can ask for.
    public var maximumRetryAfter = 60.0

    public init() {}

    /// The wait before retry number `retry` (1 for the first). Half of the
    /// exponential delay is fixed and half random ("equal jitter").
    public func delay(beforeRetry retry: Int, retryAfter: Double?, using generator: inout some RandomNumberGenerator) -> Double {
        let exponential = min(maximumDelay, base * Double(1 << min(max(retry - 1, 0), 20)))
        let jittered = exponential / 2 + Double.random(in: 0...(exponential / 2), using: &generator)
        guard let retryAfter, retryAfter > 0 else { return jittered }
        return max(jittered, min(retryAfter, maximumRetryAfter))
    }
}
