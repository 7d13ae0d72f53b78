import CImgCacheShims

/// One tar file being written through libarchive, members added whole, each
/// with the same time (0), owner (0) and mode (0644), so the same members give
/// the same bytes. Written under a temporary name (`partialPath`) that the
/// caller renames into place once the whole export succeeded. Used by one thread.
final class TarWriter {
    /// Why a tar could not be written.
    struct Failure: Error, CustomStringConvertible {
        let reason: String
        var description: String { reason }
    }

    let path: String
    let partialPath: String
    private var tar: UnsafeMutableRawPointer?

    /// Starts `path`, written as `.NAME.partial` beside it.
    init(path: String) throws(Failure) {
        self.path = path
        let slash = path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex
        partialPath = String(path[..<slash]) + "." + String(path[slash...]) + ".partial"
        var error = [CChar](repeating: 0, count: 256)
        guard let tar = ic_tar_open(partialPath, &error, error.count) else { throw Failure(reason: TarWriter.text(error)) }
        self.tar = tar
    }

    deinit {
        // Not finished (an error, a signal): the partial file goes.
        if let tar {
            var error = [CChar](repeating: 0, count: 256)
            _ = ic_tar_close(tar, &error, error.count)
            try? FileSystem.remove(partialPath)
        }
    }

    /// Adds a member called `name` holding `bytes`.
    func add(_ name: String, _ bytes: [UInt8]) throws(Failure) {
        guard let tar else { throw Failure(reason: "the tar is closed") }
        var error = [CChar](repeating: 0, count: 256)
        let status = bytes.withUnsafeBytes { ic_tar_add(tar, name, $0.baseAddress, $0.count, &error, error.count) }
        guard status == 0 else { throw Failure(reason: TarWriter.text(error)) }
    }

    /// Ends the tar (still under its partial name).
    func finish() throws(Failure) {
        guard let tar else { return }
        self.tar = nil
        var error = [CChar](repeating: 0, count: 256)
        guard ic_tar_close(tar, &error, error.count) == 0 else {
            try? FileSystem.remove(partialPath)
            throw Failure(reason: TarWriter.text(error))
        }
    }

    private static func text(_ error: [CChar]) -> String {
        String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
