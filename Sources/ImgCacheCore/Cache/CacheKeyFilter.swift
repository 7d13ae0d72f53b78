/// Turns a URL into its cache key (SDWebImage's cacheKeyFilter), so that URLs
/// differing only in parts that do not change the image share one entry:
/// signed URLs whose signature and expiry change on every request, say.
public enum CacheKeyFilter: Equatable, Sendable, CustomStringConvertible {
    /// The key is the URL as given.
    case none
    /// Drops the query string (and fragment).
    case stripQuery
    /// Keeps only the named query parameters, in the order the filter names
    /// them, so that `?w=1&h=2` and `?h=2&w=1` are one key.
    case keepQuery([String])
    /// Drops the named query parameters; the rest are sorted by name (a
    /// stable sort: repeats of one name keep their order), so that their
    /// order does not make two keys.
    case dropQuery([String])

    /// Reads `strip-query`, `keep-query=a,b`, `drop-query=a,b` or `none`.
    public init?(parsing text: String) {
        let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        var names: [String] = []
        // A name given twice counts once.
        for name in parts.count == 2 ? parts[1].split(separator: ",", omittingEmptySubsequences: false) : [] {
            let trimmed = String(name.trimmingSpaces)
            if !names.contains(trimmed) || trimmed.isEmpty { names.append(trimmed) }
        }
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

    /// The key for `url`. The fragment never reaches a server, so it is never
    /// part of a key.
    public func key(for url: String) -> String {
        let withoutFragment = URLText.withoutFragment(url)
        if case .none = self { return withoutFragment }
        guard let question = withoutFragment.firstIndex(of: "?") else { return withoutFragment }
        let base = String(withoutFragment[..<question])
        let parameters = withoutFragment[withoutFragment.index(after: question)...].split(separator: "&", omittingEmptySubsequences: true)
        let kept: [Substring]
        switch self {
        case .none: return withoutFragment
        case .stripQuery: kept = []
        case .keepQuery(let names):
            kept = names.flatMap { name in parameters.filter { Self.name(of: $0) == name } }
        case .dropQuery(let names):
            kept = parameters.enumerated()
                .filter { !names.contains(Self.name(of: $0.element)) }
                .sorted { (Self.name(of: $0.element), $0.offset) < (Self.name(of: $1.element), $1.offset) }
                .map(\.element)
        }
        return kept.isEmpty ? base : base + "?" + kept.joined(separator: "&")
    }

    private static func name(of parameter: Substring) -> String {
        String(parameter.prefix { $0 != "=" })
    }
}
