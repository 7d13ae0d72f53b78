/// What follows the URL in the key of an entry that is not the image as
/// served under the default request: after a line break (which no URL
/// imgcache fetches may hold), the transformer key (`imgcache-…`) and the
/// Accept sent when it was not the default (`Accept: …`), on one line, so
/// that the shard's URL log keeps one line per entry.
public struct KeyVariant: Equatable, Sendable {
    /// The transformer key with its `imgcache-` prefix, for a thumbnail or converted copy.
    public var transform: String?
    /// The Accept header sent, when it was not the default.
    public var accept: String?

    public init(transform: String?, accept: String?) {
        self.transform = transform
        self.accept = accept
    }

    static let transformPrefix = "imgcache-"
    static let acceptPrefix = "Accept: "

    /// The suffix of a key: the text after its first line break.
    public init(suffix: Substring) {
        if suffix.hasPrefix(KeyVariant.transformPrefix) {
            // A transformer key has no space in it: what follows the first is the Accept part.
            let space = suffix.firstIndex(of: " ")
            transform = String(suffix[..<(space ?? suffix.endIndex)])
            let rest = space.map { suffix[suffix.index(after: $0)...] } ?? ""
            accept = rest.hasPrefix(KeyVariant.acceptPrefix) ? String(rest.dropFirst(KeyVariant.acceptPrefix.count)) : nil
        } else {
            transform = nil
            accept = suffix.hasPrefix(KeyVariant.acceptPrefix) ? String(suffix.dropFirst(KeyVariant.acceptPrefix.count)) : nil
        }
    }

    /// The variant a whole key names; nil for the image as served under the default request.
    public init?(key: String) {
        guard let newline = key.firstIndex(of: "\n") else { return nil }
        self.init(suffix: key[key.index(after: newline)...])
    }

    /// The key of `urlKey` in this variant.
    public func key(for urlKey: String) -> String {
        let parts = [transform, accept.map { KeyVariant.acceptPrefix + $0 }].compactMap { $0 }
        return parts.isEmpty ? urlKey : urlKey + "\n" + parts.joined(separator: " ")
    }

    /// How `list` and `remove` name the variant: `imgcache-thumbnail(…) Accept: …`.
    public var label: String {
        [transform, accept.map { KeyVariant.acceptPrefix + $0 }].compactMap { $0 }.joined(separator: " ")
    }
}
