/// How long a response stays fresh (RFC 9111 §4.2), worked out once when it
/// arrives and kept with the entry as the instant it goes stale, so that
/// `--refresh=stale` decides without a request which entries to revalidate.
///
/// The lifetime is `Cache-Control: max-age` (imgcache is a private cache:
/// `s-maxage` is not its), else `Expires` minus `Date`, else, heuristically,
/// a tenth of the time since `Last-Modified` (§4.2.2); `no-cache` and an
/// `Expires` that does not parse make it stale at once, as does a response
/// that says none of these. `Age` counts against it.
public struct HTTPFreshness: Equatable, Sendable {
    public var cacheControl: String?
    public var expires: String?
    public var date: String?
    public var age: String?
    public var lastModified: String?

    /// The heuristic share of the time since Last-Modified.
    public static let heuristicFraction = 0.1

    public init(cacheControl: String? = nil, expires: String? = nil, date: String? = nil, age: String? = nil,
                lastModified: String? = nil) {
        self.cacheControl = cacheControl
        self.expires = expires
        self.date = date
        self.age = age
        self.lastModified = lastModified
    }

    /// The instant (seconds since the epoch) a response received at
    /// `received` stops being fresh; nil when it says nothing of it (no
    /// Cache-Control, Expires or Last-Modified): then it is stale.
    public func freshUntil(received: Double) -> Double? {
        guard let lifetime = lifetime(received: received) else { return nil }
        let ageAlready = age.flatMap { Double(trimmed($0)) }.map { $0.isFinite ? max(0, $0) : 0 } ?? 0
        return received + lifetime - ageAlready
    }

    /// Seconds the response is fresh for, from when it was made; nil when nothing says.
    func lifetime(received: Double) -> Double? {
        let directives = (cacheControl ?? "").lowercased().split(separator: ",").map { trimmed($0) }
        if directives.contains("no-cache") || directives.contains("no-store") { return 0 }
        if let maxAge = directives.first(where: { $0.hasPrefix("max-age=") }) {
            let value = trimmed(maxAge.dropFirst("max-age=".count), of: "\"")
            // A malformed max-age is stale (RFC 9111 §4.2.1), a huge one capped rather than overflowing.
            guard let seconds = Double(value), seconds.isFinite, seconds >= 0 else { return 0 }
            return min(seconds, HTTPFreshness.longest)
        }
        let origin = date.flatMap(HTTPDate.seconds).map(Double.init) ?? received
        if let expires {
            guard let end = HTTPDate.seconds(expires) else { return 0 }
            return min(max(0, Double(end) - origin), HTTPFreshness.longest)
        }
        if let modified = lastModified.flatMap(HTTPDate.seconds) {
            return min(max(0, (origin - Double(modified)) * HTTPFreshness.heuristicFraction), HTTPFreshness.longest)
        }
        return cacheControl == nil ? nil : 0
    }

    /// No response is taken as fresh for more than 10 years.
    static let longest: Double = 10 * 365 * 86_400
}

/// `text` without leading and trailing characters of `set`.
private func trimmed(_ text: some StringProtocol, of set: String = " \t") -> String {
    var slice = Substring(text)
    while let first = slice.first, set.contains(first) { slice = slice.dropFirst() }
    while let last = slice.last, set.contains(last) { slice = slice.dropLast() }
    return String(slice)
}
