#if canImport(Glibc)
import Glibc
#endif

/// What tells an imgcache namespace from any other folder: a
/// `CACHEDIR.TAG` (the cache directory tag backup tools skip) that names
/// imgcache, made with the namespace. `clean`, `clear` and `cache-info` with
/// `--all-namespaces` act only on marked folders, and a store never adopts a
/// folder that holds something else, so a wrong `IMGCACHE_DIR` and a cron
/// line cannot delete another program's files. A namespace made by an earlier
/// version has no tag but its `lock` file, and counts as marked; its next
/// store tags it.
public enum NamespaceMarker {
    public static let fileName = "CACHEDIR.TAG"
    /// The tag's first line, as the cache directory tag convention fixes it.
    static let signature = "Signature: 8a477f597d28d172789f06886806bc55"
    static let contents = signature + "\n"
        + "# This file is a cache directory tag created by imgcache: this folder is one of its namespaces.\n"
        + "# For information about cache directory tags, see https://bford.info/cachedir/\n"

    /// Whether the folder `directory` is an imgcache namespace.
    public static func isMarked(_ directory: String) -> Bool {
        // The lock file first: one status call, where the tag takes five (every run of fetch asks).
        func hasLock() -> Bool { (try? FileSystem.status(directory + "/" + NamespaceLock.fileName))??.isRegularFile == true }
        if hasLock() { return true }
        if let bytes = try? FileSystem.readFile(directory + "/" + fileName, limit: 4096),
           bytes.starts(with: signature.utf8), String(decoding: bytes, as: UTF8.self).contains("imgcache") {
            return true
        }
        // A namespace being made gets its lock before its tag: one made while the tag was read has it now.
        return hasLock()
    }

    /// Whether imgcache may make `directory` a namespace: it is one already,
    /// it does not exist, or it is empty.
    public static func mayAdopt(_ directory: String) -> Bool {
        // A namespace in use is marked, and then the folder need not be opened.
        if isMarked(directory) { return true }
        guard let folder = try? DirectoryHandle(directory) else { return true }
        if (try? folder.list())?.isEmpty == true { return true }
        // Something is there: another imgcache may be making this namespace right now (the
        // folder, then its lock file, then the tag), and its first file is the lock: asked again.
        return isMarked(directory)
    }

    /// Tags the namespace folder `directory` if it has no tag yet.
    static func mark(_ directory: String) throws(SystemError) {
        let path = directory + "/" + fileName
        let descriptor: Int32
        switch SystemCall.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o666) {
        case .success(let created): descriptor = created
        case .failure(.fileExists): return
        case .failure(let errno): throw SystemError("create", path: path, errno: errno)
        }
        defer { SystemCall.close(descriptor) }
        try FileSystem.writeAll(descriptor, Array(contents.utf8), path: path)
    }

    /// The error for a folder that holds something but is not a namespace.
    public static func notANamespace(_ directory: String) -> SystemError {
        SystemError("use as a namespace", path: directory, errno: .notDirectory,
                    detail: "it holds files but no \(fileName) of imgcache's, so it is not one of its namespaces; nothing was changed")
    }
}
