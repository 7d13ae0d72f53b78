/// Which remote stores a run uses, and where that came from: `--remote`,
/// else `IMGCACHE_REMOTE`, else the namespace's remembered ones, else none.
public struct RemoteSelection: Equatable, Sendable {
    /// Where the remotes were configured (the words cache-info prints).
    public enum Source: String, Equatable, Sendable {
        case commandLine = "command line"
        case environment = "IMGCACHE_REMOTE"
        case remembered
        case none = "default"
    }

    public let remotes: [RemoteSpec]
    public let source: Source
    /// Remembered texts this version cannot read, with why (they are left out).
    public let unreadable: [(text: String, reason: String)]

    public static func == (a: RemoteSelection, b: RemoteSelection) -> Bool {
        a.remotes == b.remotes && a.source == b.source && a.unreadable.map(\.text) == b.unreadable.map(\.text)
    }

    /// Resolves the remotes for the namespace in `namespaceDirectory`; a bad
    /// `IMGCACHE_REMOTE` is an error (the user's own setting), a bad remembered
    /// line is only left out (another version may have written it).
    public static func resolve(given: [RemoteSpec]?, environment: Environment,
                               remembered: NamespaceSettings) throws(ValueError) -> RemoteSelection {
        if let given { return RemoteSelection(remotes: given, source: .commandLine, unreadable: []) }
        if let text = environment["IMGCACHE_REMOTE"] {
            return RemoteSelection(remotes: try RemoteSpec.list(parsing: text), source: .environment, unreadable: [])
        }
        guard let texts = remembered.remotes else {
            return RemoteSelection(remotes: [], source: .none, unreadable: [])
        }
        var remotes: [RemoteSpec] = [], unreadable: [(text: String, reason: String)] = []
        for text in texts {
            do { remotes.append(try RemoteSpec(parsing: text)) } catch { unreadable.append((text, error.description)) }
        }
        return RemoteSelection(remotes: remotes, source: .remembered, unreadable: unreadable)
    }

    /// The remotes as `IMGCACHE_REMOTE` takes them (passwords shown as `***`); "none" when empty.
    public var listed: String { remotes.isEmpty ? "none" : remotes.map(\.description).joined(separator: " ") }
}
