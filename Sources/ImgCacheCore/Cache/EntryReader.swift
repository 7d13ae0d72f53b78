#if canImport(Glibc)
import Glibc
#endif

/// Finds and checks entries in one namespace-shaped folder (`<shard>/<file>`);
/// shared by the writable cache and the read-only lookup paths.
struct EntryReader: Sendable {
    let directory: String
    /// Shards this process already found to be folders (not links), so that a
    /// lookup checks its shard once per run, not once per URL; nil: every time.
    let checkedShards: ShardSet?
    /// What this process knows each shard holds, so that a miss asks the disk
    /// nothing; nil: every name is looked for.
    let listings: ShardListings?
    /// The folder kept open to open entries through without following links; nil: by path.
    let folder: NamespaceFolder?

    init(directory: String, checkedShards: ShardSet? = nil, listings: ShardListings? = nil, keepsFolderOpen: Bool = false) {
        self.directory = directory
        self.checkedShards = checkedShards
        self.listings = listings
        folder = keepsFolderOpen ? NamespaceFolder(path: directory) : nil
    }

    /// The extended attribute holding an entry's metadata.
    static let attributeName = "user.imgcache"
    /// Largest metadata a lookup reads; anything bigger is not ours.
    static let metadataLimit = 64 * 1024

    func shardDirectory(for key: CacheKey) -> String { String.joined(directory, "/", key.shard) }
    /// The likeliest path of `key`'s image (see `CacheKey.candidateFileNames`).
    func imagePath(for key: CacheKey) -> String { String.joined(directory, "/", key.shard, "/", key.fileName) }
    func sidecarPath(for key: CacheKey) -> String { String.joined(directory, "/", key.shard, "/", key.digest + ".meta") }

    /// What reading an entry's metadata found.
    enum MetadataRead {
        case found(EntryMetadata, EntryMetadata.Placement)
        /// There is no image file.
        case noImage
        /// An image file without metadata.
        case missing
        /// Metadata that does not parse.
        case unreadable(EntryMetadata.Placement)
        /// The disk would not say (an I/O error, no permission): nothing is known of the entry.
        case failed(SystemError)
    }

    /// The metadata of the image `name` at `path` (an attribute, compact or in
    /// the text form of earlier versions, else `key`'s sidecar file).
    func readMetadata(of path: String, name: String, key: CacheKey) -> MetadataRead {
        do throws(SystemError) {
            if let bytes = try FileSystem.attribute(EntryReader.attributeName, of: path, limit: EntryReader.metadataLimit) {
                guard EntryAttribute.isCompact(bytes) else {
                    guard let metadata = EntryMetadata(parsing: String(decoding: bytes, as: UTF8.self)) else { return .unreadable(.attribute) }
                    return .found(metadata, .attribute)
                }
                guard let decoded = EntryAttribute.decode(bytes, fileName: name, key: key.storedForm) else { return .unreadable(.attribute) }
                // Written for another key: named so, as the text form's key would say.
                var metadata = decoded.metadata
                if !decoded.forKey { metadata.key = "" }
                return .found(metadata, .attribute)
            }
        } catch {
            if error.errno == .noSuchFile || error.errno == .notDirectory { return .noImage }
            // Anything but "no user attributes here" is the disk failing, not the entry.
            if error.errno != .notSupported { return .failed(error) }
        }
        let bytes: [UInt8]?
        do { bytes = try FileSystem.readFile(sidecarPath(for: key), limit: EntryReader.metadataLimit) } catch { return .failed(error) }
        guard let bytes else { return .missing }
        guard let metadata = EntryMetadata(parsing: String(decoding: bytes, as: UTF8.self)) else { return .unreadable(.sidecarFile) }
        return .found(metadata, .sidecarFile)
    }

    /// What a check of one entry concluded.
    enum Verdict {
        case whole(CacheEntry)
        case absent
        /// Something is on disk at `path` but it is not a usable entry; the
        /// reason says what. `metadataMissing`: an image file without metadata.
        case damaged(path: String, reason: String, metadataMissing: Bool)
        /// The disk failed while reading it (EIO, EACCES): it may be whole, so it is left alone.
        case failed(path: String, error: SystemError)
    }

    /// Checks `key`'s entry under each name it can have (see
    /// `CacheKey.candidateFileNames`), the first file found deciding: metadata
    /// present and for this key and name, a regular file of the recorded size
    /// (and, for a sidecar, the recorded inode), whose first bytes are the
    /// recorded format.
    func check(_ key: CacheKey) -> Verdict {
        switch find(key, checkingShard: true) {
        case .nothing: return .absent
        case .decided(let verdict): return verdict
        case .candidate(let candidate): return verify(candidate)
        }
    }

    /// A file found under one of a key's names, with the metadata read from it.
    struct Candidate {
        let path: String
        let shard: String
        let name: String
        let shardIndex: Int
        let metadata: EntryMetadata
        let placement: EntryMetadata.Placement

        /// `<shard>/<name>`, the path inside the namespace folder.
        var relativePath: String { String.joined(shard, "/", name) }
    }

    /// What looking for a key's file found: nothing, a verdict already (metadata
    /// missing, unreadable or another key's), or a file to verify.
    enum Found {
        case nothing
        case decided(Verdict)
        case candidate(Candidate)
    }

    /// The first of `key`'s names a file has, and its metadata. It touches nothing,
    /// so a lookup does it without the shard's lock: a miss then takes none.
    /// `checkingShard`: the shard folder is checked not to be a link first (needed
    /// before anything is removed); else only where files are not opened through
    /// the namespace folder, which refuses links itself.
    func find(_ key: CacheKey, checkingShard: Bool = false) -> Found {
        let generation = listings?.generation(of: key.shardIndex)
        if let generation, listings?.excludes(key, in: key.shardIndex, at: generation) == true { return .nothing }
        // A link in a shard folder's place is never followed (nor anything healed through it).
        // A single lookup opens the folder first: one call, and no shard to check. A run over a list
        // opens it with its first hit, and until then checks each shard once: a shard folder not
        // made yet answers for all of a key's names in one call, where the names would take one each.
        let trustsFolder = listings?.keepsListings != true ? folder?.open() == true : folder?.isOpen == true
        if checkedShards?.contains(key.shardIndex) != true, checkingShard || !trustsFolder {
            let shard: FileStatus?
            do { shard = try FileSystem.status(shardDirectory(for: key)) } catch {
                return .decided(.failed(path: shardDirectory(for: key), error: error))
            }
            guard let shard, shard.isDirectory else {
                if shard == nil, let generation {
                    listings?.record(key.shardIndex, path: shardDirectory(for: key), generation: generation, folderMissing: true)
                }
                return .nothing
            }
            checkedShards?.insert(key.shardIndex)
        }
        let shard = key.shard
        /// What the file `name` is, nil when there is none.
        func look(_ name: String) -> Found? {
            let path = String.joined(directory, "/", shard, "/", name)
            func damaged(_ reason: String, metadataMissing: Bool = false) -> Found {
                .decided(.damaged(path: path, reason: reason, metadataMissing: metadataMissing))
            }
            switch readMetadata(of: path, name: name, key: key) {
            case .noImage: return nil
            case .missing: return damaged("its metadata is missing", metadataMissing: true)
            case .unreadable: return damaged("its metadata is unreadable")
            case .failed(let error): return .decided(.failed(path: path, error: error))
            case .found(let metadata, let placement):
                guard metadata.key == key.storedForm, metadata.fileName == name else {
                    return damaged("its metadata belongs to another key")
                }
                return .candidate(Candidate(path: path, shard: shard, name: name, shardIndex: key.shardIndex,
                                            metadata: metadata, placement: placement))
            }
        }
        // The likeliest name first, alone: the other names are made only when it is missing.
        if let found = look(key.likeliestFileName) { return found }
        for name in key.candidateFileNames.dropFirst() {
            if let found = look(name) { return found }
        }
        if let generation {
            listings?.record(key.shardIndex, path: shardDirectory(for: key), generation: generation, folderMissing: false)
        }
        return .nothing
    }

    /// Whether the file found is a whole entry: a regular file of the recorded size
    /// (and, for a sidecar, the recorded inode), whose first bytes are the recorded format.
    func verify(_ candidate: Candidate) -> Verdict {
        // An attribute is only ever on a regular file or a folder, so the file is opened
        // (through the namespace folder) before it is examined; a sidecar's image could be
        // anything, a device included, so it is examined by path first.
        if candidate.placement == .attribute, let opened = folder?.openFile(candidate.relativePath) {
            switch opened {
            case .success(let descriptor):
                defer { SystemCall.close(descriptor) }
                return verify(candidate, opened: descriptor)
            case .failure(let errno) where errno == .tooManySymbolicLinks || errno == .crossDevice || errno == .notDirectory:
                // A link in the shard folder's place (refused, as a lookup by path refuses it).
                return .absent
            case .failure(.noSuchFile):
                // Gone since it was found, or the namespace folder was made anew: by path.
                folder?.reopen()
            case .failure(let errno):
                return .failed(path: candidate.path, error: SystemError("read", path: candidate.path, errno: errno))
            }
        } else if folder != nil, checkedShards?.contains(candidate.shardIndex) != true {
            // Examined by path (a sidecar's image, or openat2 missing) where `find` trusted the
            // open folder to refuse links: the shard folder is checked here instead.
            let shard = String(candidate.path.dropLast(candidate.name.count + 1))
            do {
                guard try FileSystem.status(shard)?.isDirectory == true else { return .absent }
            } catch { return .failed(path: shard, error: error) }
            checkedShards?.insert(candidate.shardIndex)
        }
        let path = candidate.path, metadata = candidate.metadata, placement = candidate.placement
        func damaged(_ reason: String) -> Verdict { .damaged(path: path, reason: reason, metadataMissing: false) }
        let status: FileStatus
        do {
            guard let found = try FileSystem.status(path) else { return .absent }
            status = found
        } catch { return .failed(path: path, error: error) }
        guard status.isRegularFile else { return damaged("it is not a regular file") }
        // A sidecar file names its image by inode, because the two are renamed in one after the other; an
        // attribute travels with its file (even when copied). A cache copied elsewhere (a CI cache restored by tar)
        // has new inodes: there the size and a check of the first 4 KiB stand for the inode.
        if placement == .sidecarFile && status.inode != metadata.inode {
            guard status.size == metadata.byteCount, let head = metadata.head,
                  let prefix = try? FileSystem.readPrefix(path, count: EntryMetadata.headLength),
                  EntryMetadata.head(of: prefix[...]) == head else {
                return damaged("its metadata was written for another file")
            }
        }
        guard status.size == metadata.byteCount else {
            return damaged(status.size < metadata.byteCount
                ? "it is truncated (\(status.size) of \(metadata.byteCount) bytes)"
                : "it has \(status.size) bytes, not the \(metadata.byteCount) stored")
        }
        if let format = metadata.format {
            let prefix: [UInt8]
            do { prefix = try FileSystem.readPrefix(path, count: 64) } catch {
                return error.errno == .noSuchFile ? .absent : .failed(path: path, error: error)
            }
            guard format.mayStart(prefix) else {
                return damaged("its bytes are no longer a \(format.displayName) image")
            }
        }
        return .whole(CacheEntry(path: path, metadata: metadata, lastAccess: status.modified, placement: placement, inode: status.inode))
    }

    /// `verify` of a candidate whose file is open as `descriptor`.
    private func verify(_ candidate: Candidate, opened descriptor: Int32) -> Verdict {
        let path = candidate.path, metadata = candidate.metadata
        func damaged(_ reason: String) -> Verdict { .damaged(path: path, reason: reason, metadataMissing: false) }
        let status: FileStatus
        do { status = try FileSystem.status(descriptor: descriptor, path: path) } catch { return .failed(path: path, error: error) }
        guard status.isRegularFile else { return damaged("it is not a regular file") }
        guard status.size == metadata.byteCount else {
            return damaged(status.size < metadata.byteCount
                ? "it is truncated (\(status.size) of \(metadata.byteCount) bytes)"
                : "it has \(status.size) bytes, not the \(metadata.byteCount) stored")
        }
        if let format = metadata.format {
            let prefix: [UInt8]
            do { prefix = try FileSystem.readPrefix(descriptor: descriptor, path: path, count: 64) } catch {
                return .failed(path: path, error: error)
            }
            guard format.mayStart(prefix) else {
                return damaged("its bytes are no longer a \(format.displayName) image")
            }
        }
        return .whole(CacheEntry(path: path, metadata: metadata, lastAccess: status.modified, placement: .attribute, inode: status.inode))
    }
}

extension EntryMetadata {
    /// The metadata stored with the image file at `path`, read the way a
    /// lookup reads it, with the URL and key taken from the shard's `URLLog`
    /// where the compact attribute has no room for them (for `list` and
    /// inspection; nil when the file is no whole entry's).
    public static func stored(atImage path: String) -> EntryMetadata? {
        let name = String(path.split(separator: "/").last ?? "")
        let shard = FileSystem.parentDirectory(of: path)
        guard name.utf8.count >= 32 else { return nil }
        let digest = String(name.prefix(32))
        if let bytes = try? FileSystem.attribute(EntryReader.attributeName, of: path, limit: EntryReader.metadataLimit) {
            guard EntryAttribute.isCompact(bytes) else { return EntryMetadata(parsing: String(decoding: bytes, as: UTF8.self)) }
            // The URL's line is written before the entry appears, so it is there but for a failed write.
            let logged = URLLog.entry(digest, shardPath: shard)
            guard let decoded = EntryAttribute.decode(bytes, fileName: name, key: logged?.key), decoded.forKey else { return nil }
            var metadata = decoded.metadata
            metadata.url = logged?.url ?? ""
            return metadata
        }
        guard let sidecar = try? FileSystem.readFile(shard + "/" + digest + ".meta", limit: EntryReader.metadataLimit) else { return nil }
        return EntryMetadata(parsing: String(decoding: sidecar, as: UTF8.self))
    }
}
