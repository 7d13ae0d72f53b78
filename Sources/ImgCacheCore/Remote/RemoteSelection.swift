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
    ///
    /// A remembered store that would send credentials (bearer-env, bearer-file, user-env,
    /// password-env, or an S3 store's AWS_ variables) is taken only when `trustsCredentials`: when
    /// the settings file can be written by the user alone. In a team cache any member can write it,
    /// and a store they name would receive this user's tokens, files and variables.
    public static func resolve(given: [RemoteSpec]?, environment: Environment, remembered: NamespaceSettings,
                               trustsCredentials: Bool = true) throws(ValueError) -> RemoteSelection {
        if let given { return RemoteSelection(remotes: given, source: .commandLine, unreadable: []) }
        if let text = environment["IMGCACHE_REMOTE"] {
            return RemoteSelection(remotes: try RemoteSpec.list(parsing: text), source: .environment, unreadable: [])
        }
        guard let texts = remembered.remotes else {
            return RemoteSelection(remotes: [], source: .none, unreadable: [])
        }
        var remotes: [RemoteSpec] = [], unreadable: [(text: String, reason: String)] = []
        for text in texts {
            let spec: RemoteSpec
            do { spec = try RemoteSpec(parsing: text) } catch {
                unreadable.append((text, error.description))
                continue
            }
            if !trustsCredentials, spec.sendsCredentials {
                unreadable.append((spec.description, "it would send your credentials, and the settings file can be written by others "
                                   + "than you; give it in IMGCACHE_REMOTE or --remote"))
                continue
            }
            remotes.append(spec)
        }
        return RemoteSelection(remotes: remotes, source: .remembered, unreadable: unreadable)
    }

    /// The remotes as `IMGCACHE_REMOTE` takes them (passwords shown as `***`); "none" when empty.
    public var listed: String { remotes.isEmpty ? "none" : remotes.map(\.description).joined(separator: " ") }
}
