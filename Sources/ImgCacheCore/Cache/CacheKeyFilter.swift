/// Turns a URL into its cache key (SDWebImage's cacheKeyFilter), so that URLs
/// differing only in parts that do not change the image share one entry:
/// signed URLs whose signature and expiry change on every request, say.
public enum CacheKeyFilter: Equatable, Sendable, CustomStringConvertible {
    /// The key is the URL as given.
    case none
    /// Drops the query string (and fragment).
    case stripQuery
    /// Keeps only the named query parameters, in their original order.
    case keepQuery([String])
    /// Drops the named query parameters.
    case dropQuery([String])

    /// Reads `strip-query`, `keep-query=a,b`, `drop-query=a,b` or `none`.
    public init?(parsing text: String) {
        let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        let names = parts.count == 2 ? parts[1].split(separator: ",", omittingEmptySubsequences: false).map { String($0.trimmingSpaces) } : []
        switch String(parts[0]) {
        case "none" where parts.count == 1: self = .none
        case "strip-query" where parts.count == 1: self = .stripQuery
        case "keep-query" where !names.isEmpty && !names.contains(""): self = .keepQuery(names)
        case "drop-query" where !names.isEmpty && !names.contains(""): self = .dropQuery(names)
        default: return nil
        }
    }

    public var description: String {
        switch self {
        case .none: return "none"
        case .stripQuery: return "strip-query"
        case .keepQuery(let names): return "keep-query=" + names.joined(separator: ",")
        case .dropQuery(let names): return "drop-query=" + names.joined(separator: ",")
        }
    }

    /// The key for `url`. The fragment never reaches a server, so any filter
    /// other than `none` drops it too.
    public func key(for url: String) -> String {
        if case .none = self { return url }
        let withoutFragment = url.firstIndex(of: "#").map { String(url[..<$0]) } ?? url
        guard let question = withoutFragment.firstIndex(of: "?") else { return withoutFragment }
        let base = String(withoutFragment[..<question])
        let parameters = withoutFragment[withoutFragment.index(after: question)...].split(separator: "&", omittingEmptySubsequences: true)
        let kept: [Substring]
        switch self {
        case .none: return url
        case .stripQuery: kept = []
        case .keepQuery(let names): kept = parameters.filter { names.contains(Self.name(of: $0)) }
        case .dropQuery(let names): kept = parameters.filter { !names.contains(Self.name(of: $0)) }
        }
        return kept.isEmpty ? base : base + "?" + kept.joined(separator: "&")
    }

    private static func name(of parameter: Substring) -> String {
        String(parameter.prefix { $0 != "=" })
    }
}
