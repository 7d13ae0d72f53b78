#if canImport(Glibc)
import Glibc
#endif

/// The cache root: the folder that holds one folder per namespace.
public struct CacheRoot: Sendable {
    public let path: String

    public init(path: String) {
        self.path = path
    }

    /// The namespaces present: folders with valid namespace names, sorted.
    /// A link in a namespace's place is skipped, never followed.
    public func namespaces() throws(SystemError) -> [Namespace] {
        let root: DirectoryHandle
        do { root = try DirectoryHandle(path) } catch {
            if error.code == ENOENT { return [] }
            throw error
        }
        var found: [Namespace] = []
        for item in try root.list() {
            guard let namespace = try? Namespace(validating: item.name),
                  let status = try root.status(item.name), status.isDirectory else { continue }
            found.append(namespace)
        }
        return found.sorted { $0.name < $1.name }
    }
}
