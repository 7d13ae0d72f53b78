/// What each origin host is owed (`--per-host`, `--rate`) and how it has
/// fared: transfers to it at once, when it may get its next request, and the
/// failures in a row that say it is unreachable. A host that fails to connect
/// (no such name, refused, TLS, connect timeout) `failuresToGiveUp` times in a
/// row is given up: its other URLs fail at once instead of each paying the
/// same failure. Lives on the download thread only.
struct HostPoliteness {
    let concurrency: Int?
    /// Seconds between two requests to one host (`--rate`), nil for none.
    let interval: Double?
    let failuresToGiveUp: Int

    private struct Host {
        var running = 0
        var nextStart = 0.0
        var failuresInARow = 0
        var givenUp: DownloadError?
    }

    private var hosts: [String: Host] = [:]

    init(concurrency: Int?, rate: Double?, failuresToGiveUp: Int) {
        self.concurrency = concurrency
        interval = rate.map { 1 / $0 }
        self.failuresToGiveUp = failuresToGiveUp
    }

    /// The server a request is counted against: its host name, and its port when the URL names one
    /// (two servers on one machine are two: one refusing connections gives up only itself).
    static func host(of request: DownloadRequest) -> String {
        request.url.server
    }

    /// The port a URL's authority names, if any: the digits after its last ':' (not inside an IPv6 address's brackets).
    static func port(in url: UnsafeBufferPointer<UInt8>) -> String? {
        guard let start = URLText.authorityStart(in: url, before: url.count) else { return nil }
        let end = (start..<url.count).first { url[$0] == UInt8(ascii: "/") || url[$0] == UInt8(ascii: "?") || url[$0] == UInt8(ascii: "#") }
            ?? url.count
        let hostStart = ((start..<end).last { url[$0] == UInt8(ascii: "@") }).map { $0 + 1 } ?? start
        guard let colon = (hostStart..<end).last(where: { url[$0] == UInt8(ascii: ":") }),
              !(colon..<end).contains(where: { url[$0] == UInt8(ascii: "]") }), colon + 1 < end,
              (colon + 1..<end).allSatisfy({ url[$0] >= 0x30 && url[$0] <= 0x39 }) else { return nil }
        return String(decoding: UnsafeBufferPointer(rebasing: url[(colon + 1)..<end]), as: UTF8.self)
    }

    /// Why `host` gets nothing more this run, if it was given up.
    func givenUp(_ host: String) -> DownloadError? { hosts[host]?.givenUp }

    /// When `host` may get a request (`now` or later); nil while it has its fill of transfers.
    func earliestStart(_ host: String, now: Double) -> Double? {
        guard let state = hosts[host] else { return now }
        if let concurrency, state.running >= concurrency { return nil }
        return max(now, state.nextStart)
    }

    /// How late a paced request may start and still keep its host's cadence: the next is then due an
    /// interval after the turn this one had, not after it started. A loop that wakes a little late
    /// (its poll counts whole milliseconds) would otherwise add its lateness to every interval (a
    /// thousand a second came out as 530); a host idle for longer starts its cadence anew.
    static let cadenceSlack = 0.02

    /// A transfer to `host` starts.
    mutating func started(_ host: String, now: Double) {
        hosts[host, default: Host()].running += 1
        guard let interval else { return }
        let turn = hosts[host]!.nextStart
        hosts[host]!.nextStart = turn > 0 && now - turn < HostPoliteness.cadenceSlack ? turn + interval : now + interval
    }

    /// A transfer to `host` was stopped (cancelled): it says nothing of the host.
    mutating func stopped(_ host: String) {
        hosts[host, default: Host()].running = max(0, hosts[host]!.running - 1)
    }

    /// A transfer to `host` ended with `failure` (nil: it reached the server). Whether
    /// that gave the host up.
    mutating func ended(_ host: String, failure: DownloadError?) -> Bool {
        hosts[host, default: Host()].running = max(0, hosts[host]!.running - 1)
        guard let failure, HostPoliteness.isUnreachable(failure) else {
            hosts[host]!.failuresInARow = 0
            return false
        }
        hosts[host]!.failuresInARow += 1
        guard hosts[host]!.givenUp == nil, hosts[host]!.failuresInARow >= failuresToGiveUp else { return false }
        hosts[host]!.givenUp = .hostGivenUp(host: host, failures: failuresToGiveUp, cause: failure.reason)
        return true
    }

    /// Failures that say the host cannot be reached at all, not that one URL is wrong.
    static func isUnreachable(_ error: DownloadError) -> Bool {
        switch error {
        case .dns, .connectionRefused, .connectFailed, .connectTimeout, .tlsHandshake, .tlsCertificate: return true
        default: return false
        }
    }
}
