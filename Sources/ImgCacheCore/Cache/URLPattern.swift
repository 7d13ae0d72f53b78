#if canImport(Glibc)
import Glibc
#endif

/// How `list PATTERN` and `remove --match PATTERN` choose entries by URL, the
/// same for both: a glob (`fnmatch`) when the pattern has `*`, `?` or `[`,
/// else a part of the URL.
public struct URLPattern: Equatable, Sendable {
    public let text: String

    public init(_ text: String) {
        self.text = text
    }

    /// Whether `url` is chosen; an entry whose URL is unknown never is.
    public func matches(_ url: String?) -> Bool {
        guard let url else { return false }
        if text.contains(where: { "*?[".contains($0) }) { return fnmatch(text, url, 0) == 0 }
        return url.contains(text)
    }
}
