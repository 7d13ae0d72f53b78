#if canImport(Glibc)
import Glibc
#endif

/// The cache root: the folder that holds one folder per namespace.
public struct CacheRoot: Sendable {
    public let path: String

    public init(path: String) {
        self.path = path
    }

    /// The namespaces present: folders with valid namespace names that carry
    /// imgcache's marker (`NamespaceMarker`), sorted. A link in a namespace's
    /// place is skipped, never followed, and so is any other folder.
    public func namespaces() throws(SystemError) -> [Namespace] {
        let root: DirectoryHandle
        do { root = try DirectoryHandle(path) } catch {
            if error.errno == .noSuchFile { return [] }
            throw error
        }
        var found: [Namespace] = []
        for item in try root.list() {
            guard let namespace = try? Namespace(validating: item.name),
                  let status = try root.status(item.name), status.isDirectory,
                  NamespaceMarker.isMarked(path + "/" + item.name) else { continue }
            found.append(namespace)
        }
        return found.sorted { $0.name < $1.name }
    }

    /// Why other users could tamper with the cache, if they could: the root
    /// writable by others without the sticky bit (which keeps them from
    /// renaming our namespace), the namespace folder writable by its group or
    /// others at all (they could make its shard folders first), or either owned
    /// by another user. `paths` is the root, then the namespace folder.
    public static func exposure(of paths: [String]) -> String? {
        let me = geteuid()
        for (index, path) in paths.enumerated() {
            // A link is refused elsewhere; its own mode bits mean nothing.
            guard case .success(let info) = SystemCall.lstat(path), info.st_mode & S_IFMT != S_IFLNK else { continue }
            let isRoot = index == 0
            if info.st_mode & S_IWOTH != 0 && !(isRoot && info.st_mode & S_ISVTX != 0) {
                return "\(path) is writable by every user, who could replace cached images; run chmod o-w on it"
            }
            if !isRoot && info.st_mode & S_IWGRP != 0 {
                return "\(path) is writable by its group, whose members could replace cached images; run chmod g-w on it"
            }
            if me != 0 && info.st_uid != me {
                return "\(path) belongs to another user (uid \(info.st_uid)), who could replace cached images"
            }
        }
        return nil
    }
}
