#if canImport(Glibc)
import Glibc
#endif

/// A shard written the way img2dataset's "files" output is: a folder
/// (`00000/`) of the samples' files, written under a temporary name
/// (`.00000.partial/`) and put in place, replacing the folder an earlier export
/// left, only once the whole export succeeded. Used by one thread.
final class FolderShardWriter: ShardWriter {
    let path: String
    let partialPath: String
    private var committed = false

    /// Starts the folder `path`, written as `.NAME.partial` beside it.
    init(path: String) throws(TarWriter.Failure) {
        self.path = path
        let slash = path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex
        partialPath = String(path[..<slash]) + "." + String(path[slash...]) + ".partial"
        FolderShardWriter.removeFlat(partialPath)
        guard mkdir(partialPath, 0o777) == 0 else {
            throw TarWriter.Failure(reason: SystemError("create", path: partialPath, errno: Errno(errno)).description)
        }
    }

    deinit {
        // Not put in place (an error, a signal): the partial folder goes.
        if !committed { FolderShardWriter.removeFlat(partialPath) }
    }

    /// Writes the file `name` holding `bytes` in the folder.
    func add(_ name: String, _ bytes: [UInt8]) throws(TarWriter.Failure) {
        do { try OutputFile.write(bytes: bytes, to: partialPath + "/" + name) } catch {
            throw TarWriter.Failure(reason: error.description)
        }
    }

    func finish() throws(TarWriter.Failure) {}

    /// Puts the folder in place: an earlier export's folder of that name is moved aside, then removed.
    func commit() throws(SystemError) {
        let aside = partialPath.dropLast(".partial".count) + ".old"
        FolderShardWriter.removeFlat(String(aside))
        let hadOne = (try? FileSystem.status(path))??.isDirectory == true
        if hadOne { try FileSystem.rename(path, to: String(aside)) }
        try FileSystem.rename(partialPath, to: path)
        committed = true
        if hadOne { FolderShardWriter.removeFlat(String(aside)) }
    }

    /// Removes a folder of files (an export's shard holds no folders), and the folder.
    static func removeFlat(_ folder: String) {
        guard let items = try? DirectoryHandle(folder).list() else { return }
        for item in items { try? FileSystem.remove(folder + "/" + item.name) }
        rmdir(folder)
    }
}

/// Where an export's samples go: a tar, or a folder of files.
protocol ShardWriter: AnyObject {
    var path: String { get }
    var partialPath: String { get }
    func add(_ name: String, _ bytes: [UInt8]) throws(TarWriter.Failure)
    func finish() throws(TarWriter.Failure)
    /// Puts the finished shard in place of its partial name.
    func commit() throws(SystemError)
}

extension TarWriter: ShardWriter {
    func commit() throws(SystemError) { try FileSystem.rename(partialPath, to: path) }
}
