#if canImport(Glibc)
import Glibc
#endif

/// Puts a checked body in the cache as an entry, whatever brought it (an
/// origin download, a remote object, a refresh, a transform): a body in
/// memory is written to a temporary file in its shard folder, one already in
/// a file there is taken as it is, and the file is renamed into place with
/// its metadata under the shard's lock. With CacheMemoryOnly the body is
/// handed over in a temporary file outside the cache instead. Runs on the
/// manager's thread, the one thread of the process that writes entries.
struct EntryCommitter {
    let cache: DiskCache
    let options: ImageOptions
    /// The calling thread's open lock file.
    let lockHandle: NamespaceLock.Handle

    /// A body to commit.
    enum Body {
        case bytes([UInt8])
        /// A finished temporary file in the key's shard folder.
        case file(String)
        /// A copy of the file at this path (another entry), made without reading it into memory.
        case copy(of: String)
    }

    /// Makes `body` the entry of `miss`'s key, replacing the files it supersedes.
    /// `describe` receives the stored file's inode and size.
    func commit(_ body: Body, for miss: PendingFetch,
                describe: (_ inode: UInt64, _ size: Int64) -> EntryMetadata) throws(SystemError) -> CacheEntry {
        try commit(body, key: miss.key, superseding: superseded(by: miss), describe: describe)
    }

    /// Makes `body` the entry of `key`, replacing the files at `superseding`.
    func commit(_ body: Body, key: CacheKey, superseding: [String],
                describe: (_ inode: UInt64, _ size: Int64) -> EntryMetadata) throws(SystemError) -> CacheEntry {
        let pending: PendingEntry
        switch body {
        case .file(let path): pending = cache.adopt(path, for: key)
        case .bytes, .copy: pending = try cache.beginStore(for: key)
        }
        defer { pending.discard() }
        switch body {
        case .bytes(let bytes): try FileSystem.writeAll(pending.descriptor, bytes, path: pending.temporaryPath)
        case .copy(let source): try FileSystem.copy(source, to: pending.descriptor, destinationName: pending.temporaryPath)
        case .file: break
        }
        return try cache.commit(pending, superseding: superseding, lockHandle: lockHandle, describe: describe)
    }

    /// With CacheMemoryOnly, `bytes` in a new temporary file of the system's
    /// temporary folder, removed once the answer is delivered.
    func handOver(_ bytes: [UInt8]) throws(SystemError) -> String {
        try handOver(.bytes(bytes))
    }

    /// `body` (bytes, or a copy of a file) handed over as `handOver(_:)` does.
    func handOver(_ body: Body) throws(SystemError) -> String {
        let (descriptor, path) = try TemporaryFile.create(in: EntryCommitter.memoryOnlyDirectory, tag: "memory")
        defer { SystemCall.close(descriptor) }
        do throws(SystemError) {
            switch body {
            case .bytes(let bytes): try FileSystem.writeAll(descriptor, bytes, path: path)
            case .file(let source), .copy(let source): try FileSystem.copy(source, to: descriptor, destinationName: path)
            }
        } catch {
            try? FileSystem.remove(path)
            throw error
        }
        return path
    }

    /// Where CacheMemoryOnly bodies go: `$TMPDIR`, else /tmp; never the cache.
    static var memoryOnlyDirectory: String {
        guard let value = getenv("TMPDIR"), value.pointee != 0 else { return "/tmp" }
        return String(cString: value)
    }

    /// Files a new entry for `miss` replaces under another name: the entry a
    /// refresh revalidated (its format may have changed), or with
    /// FromLoaderOnly, which looked nothing up, every name the key can have.
    /// After a plain miss there is none: the lookup tried every name.
    private func superseded(by miss: PendingFetch) -> [String] {
        if let cached = miss.cached { return [cached.path] }
        guard options.contains(.fromLoaderOnly) else { return [] }
        let shard = cache.shardDirectory(for: miss.key) + "/"
        return miss.key.candidateFileNames.map { shard + $0 }
    }
}
