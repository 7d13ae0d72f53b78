#if canImport(Glibc)
import Glibc
#endif

/// One namespace of the on-disk cache.
///
/// Layout: `<root>/<namespace>/<shard>/<digest>[.<ext>]` holds the plain image
/// bytes and `<shard>/<digest>.meta` its metadata, where shard is the digest's
/// first two hex digits. The image's modification time is its last access.
///
/// A store writes both files under temporary names (`tmp.*`) in the shard
/// folder itself, removes the old metadata, renames the image into place, then
/// the metadata. Renames within one folder do not take the filesystem-wide lock
/// that renames between folders do, so parallel stores do not queue on it. A crash at any step leaves the old entry, no entry, or the
/// new entry: never an image with metadata written for other bytes. The
/// metadata also names the image's inode and size, so when two processes store
/// the same key at once, a lookup only accepts the pair that belongs together.
public struct DiskCache: Sendable {
    public let location: CacheLocation

    /// Largest metadata file a lookup reads; anything bigger is not ours.
    static let metadataLimit = 64 * 1024
    /// How the names of files being written begin; no entry's name does (entries start with hex digits).
    public static let temporaryPrefix = "tmp."

    public init(location: CacheLocation) {
        self.location = location
    }

    /// The shard folder of `key`.
    public func shardDirectory(for key: CacheKey) -> String {
        location.directory + "/" + key.shard
    }

    /// Where `key`'s image file lives (whether or not it exists).
    public func imagePath(for key: CacheKey) -> String {
        shardDirectory(for: key) + "/" + key.fileName
    }

    /// Where `key`'s metadata file lives.
    public func metadataPath(for key: CacheKey) -> String {
        shardDirectory(for: key) + "/" + key.digest + ".meta"
    }

    /// Returns the entry for `key` when a whole one is on disk, and marks it used
    /// at `now` (best effort: a read-only cache still answers).
    /// Anything inconsistent (metadata missing or for another file, a size or
    /// inode that does not match, bytes that are not the recorded format) is a miss.
    public func lookup(_ key: CacheKey, now: Double) -> CacheEntry? {
        guard let entry = validEntry(for: key) else { return nil }
        try? FileSystem.setModificationTime(entry.path, to: now)
        return entry
    }

    private func validEntry(for key: CacheKey) -> CacheEntry? {
        guard let bytes = try? FileSystem.readFile(metadataPath(for: key), limit: DiskCache.metadataLimit),
              let metadata = EntryMetadata(parsing: String(decoding: bytes, as: UTF8.self)),
              metadata.key == key.storedForm, metadata.fileName == key.fileName else { return nil }
        let path = imagePath(for: key)
        guard let status = try? FileSystem.status(path), status.isRegularFile,
              status.inode == metadata.inode, status.size == metadata.byteCount else { return nil }
        if let format = metadata.format {
            guard let prefix = FileSystem.readPrefix(path, count: 64), ImageFormat.sniff(prefix) == format else { return nil }
        }
        return CacheEntry(path: path, metadata: metadata, lastAccess: status.modified)
    }

    /// Creates the temporary image file a download writes into.
    public func beginStore(for key: CacheKey) throws(SystemError) -> PendingEntry {
        try FileSystem.makeDirectories(shardDirectory(for: key))
        let (descriptor, path) = try DiskCache.createTemporaryFile(in: shardDirectory(for: key), tag: key.digest)
        return PendingEntry(key: key, descriptor: descriptor, temporaryPath: path)
    }

    /// Takes a finished file in the temporary folder (a download's body) as the
    /// pending image for `key`.
    public func adopt(_ path: String, for key: CacheKey) -> PendingEntry {
        PendingEntry(key: key, descriptor: -1, temporaryPath: path)
    }

    /// Makes the namespace folder, so that a cache that cannot be written fails
    /// before any download starts.
    public func prepareForStores() throws(SystemError) {
        try FileSystem.makeDirectories(location.directory)
        guard access(location.directory, W_OK) == 0 else { throw SystemError("write to", path: location.directory) }
    }

    /// Replaces `entry`'s metadata with `metadata` (after a 304: the same bytes,
    /// fresher validators and stored time), and marks the entry used at `now`.
    public func replaceMetadata(of entry: CacheEntry, with metadata: EntryMetadata, key: CacheKey, now: Double) throws(SystemError) -> CacheEntry {
        let (descriptor, temporary) = try DiskCache.createTemporaryFile(in: shardDirectory(for: key), tag: key.digest + ".meta")
        defer { try? FileSystem.remove(temporary) }
        do {
            defer { close(descriptor) }
            try FileSystem.writeAll(descriptor, Array(metadata.serialized().utf8), path: temporary)
        }
        try FileSystem.rename(temporary, to: metadataPath(for: key))
        try? FileSystem.setModificationTime(entry.path, to: now)
        return CacheEntry(path: entry.path, metadata: metadata, lastAccess: now)
    }

    /// Makes `pending` the entry for its key. `describe` receives the finished
    /// image's inode and size and returns the metadata to store with it.
    public func commit(_ pending: PendingEntry, describe: (_ inode: UInt64, _ size: Int64) -> EntryMetadata) throws(SystemError) -> CacheEntry {
        let status: FileStatus
        if pending.descriptor >= 0 {
            status = try FileSystem.status(descriptor: pending.descriptor, path: pending.temporaryPath)
        } else {
            guard let found = try FileSystem.status(pending.temporaryPath) else {
                throw SystemError("examine", path: pending.temporaryPath, code: ENOENT)
            }
            status = found
        }
        pending.closeDescriptor()
        var metadata = describe(status.inode, status.size)
        metadata.fileName = pending.key.fileName
        metadata.key = pending.key.storedForm

        let (metadataDescriptor, metadataTemporary) = try DiskCache.createTemporaryFile(
            in: shardDirectory(for: pending.key), tag: pending.key.digest + ".meta")
        defer { try? FileSystem.remove(metadataTemporary) }
        do {
            defer { close(metadataDescriptor) }
            try FileSystem.writeAll(metadataDescriptor, Array(metadata.serialized().utf8), path: metadataTemporary)
        }
        // The old metadata goes first, so that it can never describe the new image.
        try FileSystem.remove(metadataPath(for: pending.key))
        let path = imagePath(for: pending.key)
        try FileSystem.rename(pending.temporaryPath, to: path)
        pending.markCommitted()
        try FileSystem.rename(metadataTemporary, to: metadataPath(for: pending.key))
        return CacheEntry(path: path, metadata: metadata, lastAccess: status.modified)
    }

    /// Opens a new file `tmp.<tag>.<pid>.<random>` in `directory`, exclusively.
    static func createTemporaryFile(in directory: String, tag: String) throws(SystemError) -> (Int32, String) {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<16 {
            let suffix = String(generator.next() as UInt64, radix: 36)
            let path = directory + "/" + temporaryPrefix + tag + "." + String(getpid()) + "." + suffix
            let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o644)
            if descriptor >= 0 { return (descriptor, path) }
            if errno != EEXIST { throw SystemError("create a file in", path: directory) }
        }
        throw SystemError("create a file in", path: directory, code: EEXIST)
    }
}

/// A whole cache entry: the image file's path and its metadata.
public struct CacheEntry: Equatable, Sendable {
    public let path: String
    public let metadata: EntryMetadata
    /// When the entry was last used, in seconds since the epoch.
    public let lastAccess: Double
}

/// An entry being written: a temporary file that becomes the entry on commit,
/// and is removed if it never does.
public final class PendingEntry {
    public let key: CacheKey
    /// Open for writing until `commit`.
    public private(set) var descriptor: Int32
    public let temporaryPath: String
    private var committed = false

    init(key: CacheKey, descriptor: Int32, temporaryPath: String) {
        self.key = key
        self.descriptor = descriptor
        self.temporaryPath = temporaryPath
    }

    func closeDescriptor() {
        if descriptor >= 0 { close(descriptor) }
        descriptor = -1
    }

    func markCommitted() { committed = true }

    /// Throws the temporary file away (a no-op after a commit).
    public func discard() {
        closeDescriptor()
        if !committed { try? FileSystem.remove(temporaryPath) }
        committed = true
    }

    deinit { discard() }
}
