#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// One namespace of the on-disk cache.
///
/// Layout: `<root>/<namespace>/<shard>/<digest>.<ext>` holds the plain image
/// bytes, where shard is the digest's first two hex digits (256 folders) and
/// ext names the bytes' format (`jpg`, `png`, `gif`, `webp`). The
/// entry's metadata is an extended attribute of that file (`user.imgcache`), set
/// on the temporary file before it is renamed into place: one rename makes an
/// image and its metadata appear together, one unlink makes them go together.
/// The image's modification time is its last access.
///
/// Where the file system keeps no user attributes (or `IMGCACHE_METADATA=files`
/// asks for it), the metadata is a sidecar file `<shard>/<digest>.meta` instead,
/// committed after the image. It then names the image's inode and size, so that
/// an image and a sidecar that were not committed together are never taken for
/// an entry; a crash between the two renames leaves an image that lookups heal.
///
/// Temporary files (`tmp.*`, see `TemporaryFile`) live in the shard folder
/// itself: renames within one folder do not take the filesystem-wide lock that
/// renames between folders do, so parallel stores do not queue on it.
public struct DiskCache: Sendable {
    public let location: CacheLocation
    /// Where new entries keep their metadata.
    public let metadataPlacement: MetadataPlacement
    let reader: EntryReader
    let lock: NamespaceLock
    /// Shard folders already made or found to be folders (not links) by this process.
    private let readyShards = ShardSet()
    /// Each shard's URLs, which the compact attribute has no room for.
    let urlLog: URLLog
    /// The namespace's settings, read on first use and then kept for the run.
    private let settingsRead = SettingsSnapshot()
    /// Whether a hit marks its entry used (LRU): not for a look at the cache (a contact sheet),
    /// which must not keep entries past `clean --max-age`.
    public var marksUse = true

    /// Where an entry's metadata goes on store.
    public enum MetadataPlacement: String, Sendable {
        /// An extended attribute where the file system has them, else a sidecar file.
        case automatic
        /// Always a sidecar file (for caches copied by tools that drop attributes).
        case sidecarFiles = "files"
    }

    /// What this process knows each shard holds; every store also raises its shard's generation.
    let listings: ShardListings

    /// `listsShards`: lookups list a shard after a miss in it, so that later
    /// misses there cost no system call (for runs over many URLs).
    public init(location: CacheLocation, metadataPlacement: MetadataPlacement = .automatic, listsShards: Bool = false) {
        self.location = location
        self.metadataPlacement = metadataPlacement
        lock = NamespaceLock(namespaceDirectory: location.directory)
        listings = ShardListings(lockPath: lock.path, keepsListings: listsShards)
        reader = EntryReader(directory: location.directory, checkedShards: readyShards, listings: listings, keepsFolderOpen: true)
        urlLog = URLLog(namespaceDirectory: location.directory)
    }

    /// The namespace folder.
    public var directory: String { location.directory }

    /// The namespace's settings file as read, with what in it cannot be used:
    /// read once per run (the first asker reads it), kept up to date by `updateSettings`.
    public var settingsInspection: NamespaceSettings.Inspection {
        settingsRead.value.withLock { read in
            if let read { return read }
            let inspection = NamespaceSettings.inspect(directory)
            read = inspection
            return inspection
        }
    }

    /// The namespace's usable settings (`settingsInspection.settings`).
    public var settings: NamespaceSettings { settingsInspection.settings }

    /// Keeps what `updateSettings` saved as the settings of the run.
    func settingsSaved(_ settings: NamespaceSettings) {
        settingsRead.value.withLock { $0 = NamespaceSettings.Inspection(settings: settings, path: directory + "/" + NamespaceSettings.fileName) }
    }

    /// The shard folder of `key`.
    public func shardDirectory(for key: CacheKey) -> String { reader.shardDirectory(for: key) }

    /// Where `key`'s image file most likely lives (whether or not it exists;
    /// an entry is named for its bytes' format, see `CacheKey`).
    public func imagePath(for key: CacheKey) -> String { reader.imagePath(for: key) }

    /// Where `key`'s sidecar metadata file lives when it has one.
    public func sidecarPath(for key: CacheKey) -> String { reader.sidecarPath(for: key) }

    /// Looks `key` up. A whole entry is marked used at `now` (best effort: a
    /// read-only cache still answers); its `lastAccess` is the use before this one. Anything on disk that is not a whole entry
    /// (metadata missing, unreadable or for another file, a wrong size, bytes
    /// that are not the recorded format) is removed and reported as damaged.
    public func lookup(_ key: CacheKey, now: Double) -> LookupResult {
        // No lock: a clean removes an entry by renaming it away first and then checking it was not
        // used (see `CacheCleaner.removeEntries`), so the touch by path below either lands before
        // that rename, and the clean keeps the entry, or finds the name gone: a miss. A hit can
        // never be removed between being found and being touched.
        let first: EntryReader.Verdict
        switch reader.find(key) {
        case .nothing: return .miss
        case .decided(let verdict): first = verdict
        case .candidate(let candidate): first = reader.verify(candidate)
        }
        switch first {
        case .whole(let entry):
            guard marksUse else { return .hit(entry) }
            do {
                try FileSystem.setModificationTime(entry.path, to: now)
            } catch where error.errno == .noSuchFile {
                return .miss
            } catch {
                // A cache the user may read but not write still answers.
            }
            return .hit(entry)
        case .absent: return .miss
        case .failed(let path, let error): return .unreadable(path: path, error: error)
        case .damaged:
            // Look again holding the shard exclusively: a store in progress (whose
            // sidecar is not yet renamed in) finishes first and is then whole.
            return lock.withShard(key.shardIndex, .exclusive) { () -> LookupResult in
                switch reader.check(key) {
                case .whole(let entry):
                    if marksUse { try? FileSystem.setModificationTime(entry.path, to: now) }
                    return .hit(entry)
                case .absent: return .miss
                case .failed(let path, let error): return .unreadable(path: path, error: error)
                case .damaged(let path, let reason, _):
                    let removed = (try? FileSystem.remove(path)) != nil
                    try? FileSystem.remove(sidecarPath(for: key))
                    return .damaged(path: path, reason: reason, removed: removed)
                }
            }
        }
    }

    /// Creates the temporary file in `key`'s shard folder that a body held in
    /// memory (a small download, a remote object, a transform's output) is
    /// written to before its commit; a large download arrives in such a file
    /// already and is adopted instead. Its shard folder is made when missing (and with it, when the namespace
    /// was removed meanwhile, the namespace and its lock file), at the cost of
    /// a system call only then.
    public func beginStore(for key: CacheKey) throws(SystemError) -> PendingEntry {
        let shard = try prepareShard(for: key)
        let (descriptor, path): (Int32, String)
        do {
            (descriptor, path) = try TemporaryFile.create(in: shard, tag: key.digest)
        } catch where error.errno == .noSuchFile {
            try prepareForStores()
            try FileSystem.makeDirectories(shard)
            (descriptor, path) = try TemporaryFile.create(in: shard, tag: key.digest)
        }
        return PendingEntry(key: key, descriptor: descriptor, temporaryPath: path)
    }

    /// `key`'s shard folder, made if missing; the first time this process
    /// stores in a shard it also checks that a folder, never a link, has the
    /// shard's name (a link planted there is never written through). Later
    /// calls cost no system call.
    public func prepareShard(for key: CacheKey) throws(SystemError) -> String {
        let shard = shardDirectory(for: key)
        guard !readyShards.contains(key.shardIndex) else { return shard }
        let generation = listings.generation(of: key.shardIndex)
        switch SystemCall.mkdir(shard, 0o777) {
        case .success:
            // Made here, so empty as of the generation read before: misses there ask the disk nothing.
            if let generation { listings.record(key.shardIndex, path: shard, generation: generation, folderMissing: true) }
        case .failure(.fileExists):
            let found = try FileSystem.status(shard)
            guard found?.isDirectory == true else {
                if found?.isSymbolicLink == true {
                    throw SystemError("use directory", path: shard, errno: .tooManySymbolicLinks,
                                      detail: "it is a symbolic link; imgcache does not follow links inside the cache")
                }
                throw SystemError("use directory", path: shard, errno: .notDirectory)
            }
        case .failure(.noSuchFile):
            // The namespace itself is gone (removed while a run goes on): made
            // again, lock file included.
            try prepareForStores()
            try FileSystem.makeDirectories(shard)
        case .failure(let errno):
            throw SystemError("create directory", path: shard, errno: errno)
        }
        readyShards.insert(key.shardIndex)
        return shard
    }

    /// Takes a finished temporary file in `key`'s shard folder (a download's
    /// body) as the pending image for `key`.
    public func adopt(_ path: String, for key: CacheKey) -> PendingEntry {
        PendingEntry(key: key, descriptor: -1, temporaryPath: path)
    }

    /// Makes the namespace folder and its lock file, so that a cache that cannot
    /// be written fails before any download starts.
    public func prepareForStores() throws(SystemError) {
        // A default root made here is the user's alone; below it, folders follow the umask.
        if location.isPrivateRoot, (try? FileSystem.status(location.root)) ?? nil == nil {
            try FileSystem.makeDirectories(location.root, mode: 0o700)
        }
        // Another program's folder under the namespace's name is never written into.
        guard NamespaceMarker.mayAdopt(directory) else { throw NamespaceMarker.notANamespace(directory) }
        try FileSystem.makeDirectories(directory)
        try SystemCall.access(directory, W_OK).get("write to", path: directory)
        // The lock file first: it marks the folder as a namespace already, so another
        // process that finds the tag half-written still knows the folder for one.
        try lock.create()
        listings.attach()
        try NamespaceMarker.mark(directory)
    }

    /// Replaces `entry`'s metadata with `metadata` (after a 304: the same bytes,
    /// fresher validators and stored time), and marks the entry used at `now`.
    /// Nil when the entry's file changed since it was looked up (another
    /// process stored the key meanwhile): that newer entry is left as it is.
    public func replaceMetadata(of entry: CacheEntry, with metadata: EntryMetadata, key: CacheKey, now: Double,
                                lockHandle: NamespaceLock.Handle? = nil) throws(SystemError) -> CacheEntry? {
        try lock.withShard(key.shardIndex, .shared, using: lockHandle) { () throws(SystemError) -> CacheEntry? in
            guard let status = try FileSystem.status(entry.path), status.isRegularFile,
                  status.inode == entry.inode, status.size == entry.metadata.byteCount else { return nil }
            switch entry.placement {
            case .attribute:
                try FileSystem.setAttribute(EntryReader.attributeName, of: entry.path, to: EntryAttribute.encode(metadata))
            case .sidecarFile:
                let temporary = try writeSidecar(metadata, for: key)
                defer { try? FileSystem.remove(temporary) }
                try FileSystem.rename(temporary, to: sidecarPath(for: key))
            }
            try? FileSystem.setModificationTime(entry.path, to: now)
            return CacheEntry(path: entry.path, metadata: metadata, lastAccess: now, placement: entry.placement, inode: entry.inode)
        }
    }

    /// Removes `entry` (found for `key`) unless it changed since it was found:
    /// a refresh learnt that the server no longer has the image.
    public func remove(_ entry: CacheEntry, key: CacheKey) throws(SystemError) {
        try lock.withShard(key.shardIndex, .exclusive) { () throws(SystemError) in
            guard let status = try FileSystem.status(entry.path), status.isRegularFile,
                  status.inode == entry.inode, status.size == entry.metadata.byteCount else { return }
            try FileSystem.remove(entry.path)
            if entry.placement == .sidecarFile { try? FileSystem.remove(sidecarPath(for: key)) }
        }
    }

    /// Removes an entry `list` found (`imgcache remove`), under its shard's
    /// exclusive lock, unless it was stored anew since (another inode);
    /// whether it was removed.
    public func remove(_ listed: ListedEntry) throws(SystemError) -> Bool {
        let name = String(listed.path.split(separator: "/").last ?? "")
        guard name.utf8.count > 32, let shard = Int(name.prefix(2), radix: 16) else { return false }
        return try lock.withShard(shard, .exclusive) { () throws(SystemError) -> Bool in
            guard let status = try FileSystem.status(listed.path), status.isRegularFile, status.inode == listed.inode else { return false }
            try FileSystem.remove(listed.path)
            try FileSystem.remove(FileSystem.parentDirectory(of: listed.path) + "/" + EntryNames.digest(of: name) + ".meta")
            return true
        }
    }

    /// Makes `pending` the entry for its key, named for its format (the
    /// extension of its bytes). `describe` receives the finished image's inode
    /// and size and returns the metadata to store with it. `superseding`: files
    /// of the key under other names (a refresh that changed format), removed
    /// in the same shard lock.
    /// `lockHandle` keeps the lock file open between stores of one thread.
    public func commit(_ pending: PendingEntry, superseding: [String] = [], lockHandle: NamespaceLock.Handle? = nil,
                       describe: (_ inode: UInt64, _ size: Int64) -> EntryMetadata) throws(SystemError) -> CacheEntry {
        let status: FileStatus
        if pending.descriptor >= 0 {
            status = try FileSystem.status(descriptor: pending.descriptor, path: pending.temporaryPath)
        } else {
            guard let found = try FileSystem.status(pending.temporaryPath) else {
                throw SystemError("examine", path: pending.temporaryPath, errno: .noSuchFile)
            }
            status = found
        }
        pending.closeDescriptor()
        let key = pending.key
        var metadata = describe(status.inode, status.size)
        metadata.fileName = metadata.format.map(key.fileName(for:)) ?? key.fileName
        metadata.key = key.storedForm
        let path = shardDirectory(for: key) + "/" + metadata.fileName
        let stale = superseding.filter { $0 != path }

        if metadataPlacement == .automatic, attachAttribute(metadata, to: pending.temporaryPath) {
            try lock.withShard(key.shardIndex, .shared, using: lockHandle) { () throws(SystemError) in
                // The URL first: a crash between the two leaves a line without an entry, never the reverse.
                urlLog.append(URLLog.line(digest: key.digest, key: metadata.key, url: metadata.url), shard: key.shardIndex)
                try FileSystem.rename(pending.temporaryPath, to: path)
                pending.markCommitted()
                listings.added(key)
                for other in stale { try? FileSystem.remove(other) }
            }
            // As a lookup reads it back: an attribute travels with its file and names no inode.
            metadata.inode = 0
            return CacheEntry(path: path, metadata: metadata, lastAccess: status.modified, placement: .attribute, inode: status.inode)
        }

        // The image's first bytes, so that a copy of it with another inode is still known as its own.
        if let prefix = try? FileSystem.readPrefix(pending.temporaryPath, count: EntryMetadata.headLength) {
            metadata.head = EntryMetadata.head(of: prefix[...])
        }
        let sidecarTemporary = try writeSidecar(metadata, for: key)
        defer { try? FileSystem.remove(sidecarTemporary) }
        try lock.withShard(key.shardIndex, .shared, using: lockHandle) { () throws(SystemError) in
            // The old sidecar goes first, so that it can never describe the new image.
            try FileSystem.remove(sidecarPath(for: key))
            for other in stale { try? FileSystem.remove(other) }
            urlLog.append(URLLog.line(digest: key.digest, key: metadata.key, url: metadata.url), shard: key.shardIndex)
            try FileSystem.rename(pending.temporaryPath, to: path)
            pending.markCommitted()
            try FileSystem.rename(sidecarTemporary, to: sidecarPath(for: key))
            listings.added(key)
        }
        return CacheEntry(path: path, metadata: metadata, lastAccess: status.modified, placement: .sidecarFile, inode: status.inode)
    }

    /// Sets the metadata attribute (its compact form) on the temporary image.
    /// False where the file system has no user attributes; the caller then
    /// writes a sidecar file.
    private func attachAttribute(_ metadata: EntryMetadata, to path: String) -> Bool {
        (try? FileSystem.setAttribute(EntryReader.attributeName, of: path, to: EntryAttribute.encode(metadata))) != nil
    }

    /// Writes `metadata` to a new temporary file beside `key`'s entry; returns its path.
    private func writeSidecar(_ metadata: EntryMetadata, for key: CacheKey) throws(SystemError) -> String {
        let (descriptor, temporary) = try TemporaryFile.create(in: shardDirectory(for: key), tag: key.digest + ".meta")
        do {
            defer { SystemCall.close(descriptor) }
            try FileSystem.writeAll(descriptor, Array(metadata.serialized().utf8), path: temporary)
        } catch {
            try? FileSystem.remove(temporary)
            throw error
        }
        return temporary
    }
}

/// What a lookup found.
public enum LookupResult: Equatable, Sendable {
    case hit(CacheEntry)
    case miss
    /// Something was there but not a whole entry; it was removed (unless the
    /// cache is read-only), so this is a miss.
    case damaged(path: String, reason: String, removed: Bool)
    /// The disk failed while it was read (EIO, EACCES). It is left in place,
    /// since it may be whole, and this is a miss.
    case unreadable(path: String, error: SystemError)

    /// The entry, for a hit.
    public var entry: CacheEntry? {
        if case .hit(let entry) = self { return entry }
        return nil
    }
}

/// A whole cache entry: the image file's path and its metadata.
public struct CacheEntry: Equatable, Sendable {
    public let path: String
    public let metadata: EntryMetadata
    /// When the entry was last used, in seconds since the epoch.
    public let lastAccess: Double
    /// Where its metadata is kept.
    public let placement: EntryMetadata.Placement
    /// The image file's inode when it was found: a later change of the entry
    /// (a store by another process) gives the path another inode.
    public let inode: UInt64

    public init(path: String, metadata: EntryMetadata, lastAccess: Double, placement: EntryMetadata.Placement, inode: UInt64) {
        self.path = path
        self.metadata = metadata
        self.lastAccess = lastAccess
        self.placement = placement
        self.inode = inode
    }
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
        if descriptor >= 0 { SystemCall.close(descriptor) }
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

/// A namespace's settings once read, shared by the copies of a `DiskCache`.
final class SettingsSnapshot: Sendable {
    let value = Mutex<NamespaceSettings.Inspection?>(nil)
}

/// A set of shard numbers (0-255) that threads share without a lock.
final class ShardSet: Sendable {
    private let low = Atomic<UInt64>(0), lowMiddle = Atomic<UInt64>(0)
    private let highMiddle = Atomic<UInt64>(0), high = Atomic<UInt64>(0)

    private func word(_ index: Int) -> Int { (index >> 6) & 3 }
    private func bit(_ index: Int) -> UInt64 { 1 << UInt64(index & 63) }

    func contains(_ index: Int) -> Bool {
        let value: UInt64
        switch word(index) {
        case 0: value = low.load(ordering: .relaxed)
        case 1: value = lowMiddle.load(ordering: .relaxed)
        case 2: value = highMiddle.load(ordering: .relaxed)
        default: value = high.load(ordering: .relaxed)
        }
        return value & bit(index) != 0
    }

    func insert(_ index: Int) {
        switch word(index) {
        case 0: low.bitwiseOr(bit(index), ordering: .relaxed)
        case 1: lowMiddle.bitwiseOr(bit(index), ordering: .relaxed)
        case 2: highMiddle.bitwiseOr(bit(index), ordering: .relaxed)
        default: high.bitwiseOr(bit(index), ordering: .relaxed)
        }
    }
}
