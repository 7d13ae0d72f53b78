#if canImport(Glibc)
import Glibc
#endif

/// The cache root: the folder that holds one folder per namespace.
public struct CacheRoot: Sendable {
    public let path: String

    public init(path: String) {
        self.path = path
    }

    /// What the root holds.
    public struct Listing: Sendable {
        /// Folders with valid namespace names that carry imgcache's marker (`NamespaceMarker`), sorted.
        public var namespaces: [Namespace] = []
        /// Symbolic links with a namespace's name: skipped, never followed, and said.
        public var links: [String] = []
        /// Whether the root exists at all.
        public var exists = true
    }

    /// The namespaces present, and the links standing in a namespace's place.
    /// Any other folder is skipped without a word: it is not imgcache's.
    public func list() throws(SystemError) -> Listing {
        let root: DirectoryHandle
        do { root = try DirectoryHandle(path) } catch {
            if error.errno == .noSuchFile { return Listing(exists: false) }
            throw error
        }
        var listing = Listing()
        for item in try root.list() {
            guard let namespace = try? Namespace(validating: item.name), let status = try root.status(item.name) else { continue }
            if status.isSymbolicLink {
                listing.links.append(item.name)
            } else if status.isDirectory, NamespaceMarker.isMarked(path + "/" + item.name) {
                listing.namespaces.append(namespace)
            }
        }
        listing.namespaces.sort { $0.name < $1.name }
        listing.links.sort()
        return listing
    }

    /// Why other users could tamper with the cache, if they could: the root
    /// writable by others without the sticky bit (which keeps them from
    /// renaming our namespace), the namespace folder writable by its group or
    /// others at all (they could make its shard folders first), or either owned
    /// by another user. `paths` is the root, then the namespace folder.
    /// `sharedMask`: the mask the cache was given on purpose (IMGCACHE_UMASK,
    /// `config --umask`); what it shares (a team's group, or everyone) is meant,
    /// and not warned of: a group-shared namespace is also the other members'.
    public static func exposure(of paths: [String], sharedMask: mode_t? = nil) -> String? {
        let me = geteuid()
        let sharedWithGroup = sharedMask.map { $0 & 0o020 == 0 } ?? false
        let sharedWithEveryone = sharedMask.map { $0 & 0o002 == 0 } ?? false
        for (index, path) in paths.enumerated() {
            // A link is refused elsewhere; its own mode bits mean nothing.
            guard case .success(let info) = SystemCall.lstat(path), info.st_mode & S_IFMT != S_IFLNK else { continue }
            let isRoot = index == 0
            if info.st_mode & S_IWOTH != 0 && !(isRoot && info.st_mode & S_ISVTX != 0) && !sharedWithEveryone {
                return "\(path) is writable by every user, who could replace cached images; run chmod o-w on it"
            }
            if !isRoot && info.st_mode & S_IWGRP != 0 && !sharedWithGroup {
                return "\(path) is writable by its group, whose members could replace cached images; run chmod g-w on it"
            }
            if me != 0 && info.st_uid != me && !sharedWithGroup {
                return "\(path) belongs to another user (uid \(info.st_uid)), who could replace cached images"
            }
        }
        return nil
    }
}
