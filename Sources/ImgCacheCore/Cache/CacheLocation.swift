#if canImport(Glibc)
import Glibc
#endif

/// Where a namespace lives: the cache root and the namespace folder under it.
public struct CacheLocation: Equatable, Sendable {
    /// The cache root (absolute).
    public let root: String
    public let namespace: Namespace
    /// The root is the user's own default (under `$XDG_CACHE_HOME` or
    /// `~/.cache`): made private (0700) when imgcache makes it. A root named
    /// with `--cache-dir` or `IMGCACHE_DIR` is made as the umask allows.
    public let isPrivateRoot: Bool

    /// `<root>/<namespace>`.
    public var directory: String { root + "/" + namespace.name }

    public init(root: String, namespace: Namespace, isPrivateRoot: Bool = false) {
        var trimmed = root
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
        self.root = trimmed
        self.namespace = namespace
        self.isPrivateRoot = isPrivateRoot
    }

    /// The location with its root's own symbolic link followed: a cache
    /// moved to another disk behind a link is used there by every command.
    /// (Links inside the cache, in a namespace's or a shard's place, are
    /// never followed.) One `lstat` when the root is no link.
    public func followingRootLink() -> CacheLocation {
        guard (try? FileSystem.status(root))??.isSymbolicLink == true, let resolved = realpath(root, nil) else { return self }
        defer { free(resolved) }
        return CacheLocation(root: String(cString: resolved), namespace: namespace, isPrivateRoot: isPrivateRoot)
    }

    /// Whether the namespace's own folder is a symbolic link, which no command follows.
    public var namespaceIsLink: Bool {
        (try? FileSystem.status(directory))??.isSymbolicLink == true
    }

    /// Why no location could be worked out.
    public enum ResolutionError: Error, Equatable, Sendable, CustomStringConvertible {
        /// From `$IMGCACHE_NAMESPACE` when `fromEnvironment`, else as given.
        case invalidNamespace(fromEnvironment: Bool, ValidationError)
        case noHome

        public typealias ValidationError = Namespace.ValidationError

        public var description: String {
            switch self {
            case .invalidNamespace(let fromEnvironment, let error):
                return "invalid namespace" + (fromEnvironment ? " from IMGCACHE_NAMESPACE" : "") + ": \(error)"
            case .noHome: return "cannot find a cache folder: HOME is not set and the user has no home folder"
            }
        }
    }

    /// Resolves the root from `--cache-dir`, else `$IMGCACHE_DIR`, else
    /// `$XDG_CACHE_HOME/imgcache` (when absolute), else `$HOME/.cache/imgcache`;
    /// and the namespace from `-n`, else `$IMGCACHE_NAMESPACE`, else `default`.
    /// Empty values count as unset. Pure: everything comes in as arguments.
    public static func resolve(
        cacheDirectory: String?,
        namespace: String?,
        environment: [String: String],
        currentDirectory: String
    ) throws(ResolutionError) -> CacheLocation {
        try resolve(cacheDirectory: cacheDirectory, namespace: namespace, environment: Environment(environment),
                    currentDirectory: currentDirectory)
    }

    /// `resolve` with the variables read from `environment`.
    public static func resolve(
        cacheDirectory: String?,
        namespace: String?,
        environment: Environment,
        currentDirectory: String
    ) throws(ResolutionError) -> CacheLocation {
        func value(_ name: String) -> String? {
            guard let text = environment[name], !text.isEmpty else { return nil }
            return text
        }
        let root: String
        var isPrivate = true
        if let explicit = cacheDirectory.flatMap({ $0.isEmpty ? nil : $0 }) ?? value("IMGCACHE_DIR") {
            root = explicit.hasPrefix("/") ? explicit : currentDirectory + "/" + explicit
            isPrivate = false
        } else if let xdg = value("XDG_CACHE_HOME"), xdg.hasPrefix("/") {
            root = xdg + "/imgcache"
        } else if let home = value("HOME") {
            root = home + "/.cache/imgcache"
        } else {
            throw .noHome
        }

        let chosen: (name: String, fromEnvironment: Bool)
        if let namespace { chosen = (namespace, false) }
        else if let fromEnvironment = value("IMGCACHE_NAMESPACE") { chosen = (fromEnvironment, true) }
        else { return CacheLocation(root: root, namespace: .default, isPrivateRoot: isPrivate) }
        do {
            return CacheLocation(root: root, namespace: try Namespace(validating: chosen.name), isPrivateRoot: isPrivate)
        } catch {
            throw .invalidNamespace(fromEnvironment: chosen.fromEnvironment, error)
        }
    }
}
