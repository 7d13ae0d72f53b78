#if canImport(Glibc)
import Glibc
#endif

/// Everything in a namespace's shard folders, read without opening any file:
/// a directory listing and an `lstat` per name, shards spread over a few
/// threads. `cache-info` sums it; `clean` plans from it.
public struct NamespaceScan: Sendable {
    public let directory: String
    /// Every image file, whether or not its metadata is whole (see `entries`).
    public let images: [ScannedFile]
    /// Sidecar metadata files (`<digest>.meta`).
    public let sidecars: [ScannedFile]
    public let temporaries: [ScannedFile]
    /// Symbolic links (and FIFOs, devices, sockets) where shard folders or the cache's files belong: never followed or opened.
    public let links: [ScannedFile]
    /// Whether the file system keeps extended attributes (so an image without
    /// a sidecar carries its metadata itself).
    public let attributesSupported: Bool
    /// Shard folders that could not be read (permissions, I/O errors): left
    /// out of the scan, so what is known of them is only that.
    public var unreadableShards: [SystemError] = []
    /// The size of each shard's URL log, by shard name.
    public var logSizes: [String: Int64] = [:]

    /// One name found in a shard folder (or, for a linked shard, the namespace folder).
    public struct ScannedFile: Sendable {
        /// The shard folder's name ("" for a link in the namespace folder itself).
        public let shard: String
        public let name: String
        public let inode: UInt64
        public let size: Int64
        public let allocatedSize: Int64
        /// Modification time: for an image, its last access.
        public let modified: Double
        /// For an image: whether a sidecar metadata file sits beside it.
        public let hasSidecar: Bool

        /// `<shard>/<name>`.
        public var relativePath: String { shard.isEmpty ? name : shard + "/" + name }
    }

    /// The images that are entries: all of them where attributes hold metadata,
    /// else those with a sidecar. (A crash mid-store, in sidecar mode, can leave
    /// an image without one; lookups heal it and `clean` removes it.)
    public var entries: [ScannedFile] {
        attributesSupported ? images : images.filter(\.hasSidecar)
    }

    /// Images that are not entries.
    public var incompleteImages: [ScannedFile] {
        attributesSupported ? [] : images.filter { !$0.hasSidecar }
    }

    /// Sidecars whose image is gone.
    public var orphanSidecars: [ScannedFile] {
        let withImage = Set(images.filter(\.hasSidecar).map { $0.shard + "/" + EntryNames.digest(of: $0.name) })
        return sidecars.filter { !withImage.contains($0.shard + "/" + EntryNames.digest(of: $0.name)) }
    }

    /// Scans the namespace folder at `directory`; an absent folder is an empty scan.
    public static func scan(_ directory: String) throws(SystemError) -> NamespaceScan {
        let namespace: DirectoryHandle
        do { namespace = try DirectoryHandle(directory) } catch {
            if error.errno == .noSuchFile { return NamespaceScan(directory: directory, images: [], sidecars: [], temporaries: [], links: [], attributesSupported: true) }
            throw error
        }
        var shardNames: [String] = []
        var links: [ScannedFile] = []
        for item in try namespace.list() where EntryNames.isShard(item.name) {
            if item.type == UInt8(DT_LNK) || item.type == UInt8(DT_UNKNOWN) {
                if let status = try namespace.status(item.name), status.isSymbolicLink {
                    links.append(ScannedFile(shard: "", name: item.name, inode: status.inode, size: status.size,
                                             allocatedSize: status.allocatedSize, modified: status.modified, hasSidecar: false))
                    continue
                }
            }
            // Anything else in a shard's place (a file, a FIFO) fails to open as a folder: said, as an unreadable shard is.
            shardNames.append(item.name)
        }
        let shards = shardNames.sorted()
        // One shard that cannot be read is reported, not the end of the scan.
        let listings = try ShardWorkers.map(shards.count) { (index) throws(SystemError) -> Result<ShardListing, SystemError> in
            do throws(SystemError) { return .success(try ShardListing.read(namespace: directory, shard: shards[index])) } catch {
                return .failure(error)
            }
        }

        var images: [ScannedFile] = [], sidecars: [ScannedFile] = [], temporaries: [ScannedFile] = []
        var unreadable: [SystemError] = []
        var logSizes: [String: Int64] = [:]
        for (index, outcome) in listings.enumerated() {
            switch outcome {
            case .success(let listing)?:
                if let size = listing.logSize { logSizes[shards[index]] = size }
                images += listing.images
                sidecars += listing.sidecars
                temporaries += listing.temporaries
                links += listing.links
            case .failure(let error)?: unreadable.append(error)
            case nil: continue
            }
        }
        var scan = NamespaceScan(directory: directory, images: images, sidecars: sidecars, temporaries: temporaries,
                                 links: links, attributesSupported: FileSystem.supportsAttributes(directory))
        scan.unreadableShards = unreadable
        scan.logSizes = logSizes
        return scan
    }

    /// Shards are listed on up to this many threads (a directory listing and
    /// an lstat per file are mostly waiting on the kernel, one core each).
    static var threadCount: Int { min(4, max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))) }
}

/// One shard folder's contents, sorted by kind.
struct ShardListing: Sendable {
    var images: [NamespaceScan.ScannedFile] = []
    var sidecars: [NamespaceScan.ScannedFile] = []
    var temporaries: [NamespaceScan.ScannedFile] = []
    var links: [NamespaceScan.ScannedFile] = []
    /// The size of the shard's URL log, if it has one.
    var logSize: Int64?

    static func read(namespace: String, shard: String) throws(SystemError) -> ShardListing {
        let folder: DirectoryHandle
        do { folder = try DirectoryHandle(namespace).child(shard) } catch {
            if error.errno == .noSuchFile { return ShardListing() }  // removed meanwhile
            throw error
        }
        let items = try folder.list()
        let sidecarDigests = Set(items.lazy.filter { EntryNames.isSidecar($0.name) }.map { EntryNames.digest(of: $0.name) })
        var listing = ShardListing()
        for item in items {
            let kind = EntryNames.kind(of: item.name)
            if item.name == URLLog.fileName, let status = try folder.status(item.name), status.isRegularFile {
                listing.logSize = status.size
                continue
            }
            if kind == .foreign && item.type != UInt8(DT_LNK) && item.type != UInt8(DT_UNKNOWN) { continue }
            guard let status = try folder.status(item.name) else { continue }  // removed meanwhile
            let digest = EntryNames.digest(of: item.name)
            let file = NamespaceScan.ScannedFile(
                shard: shard, name: item.name, inode: status.inode, size: status.size,
                allocatedSize: status.allocatedSize, modified: status.modified,
                hasSidecar: kind == .image && sidecarDigests.contains(digest))
            if status.isSymbolicLink { listing.links.append(file); continue }
            guard status.isRegularFile else {
                // A FIFO, device or socket under one of the cache's names was planted: removed as a link is.
                if kind != .foreign, !status.isDirectory { listing.links.append(file) }
                continue
            }
            switch kind {
            case .image: listing.images.append(file)
            case .sidecar: listing.sidecars.append(file)
            case .temporary: listing.temporaries.append(file)
            case .foreign: break
            }
        }
        return listing
    }
}

/// The names the cache gives its files.
enum EntryNames {
    enum Kind { case image, sidecar, temporary, foreign }

    static func kind(of name: String) -> Kind {
        if TemporaryFile.isTemporary(name) { return .temporary }
        let utf8 = Array(name.utf8)
        guard utf8.count >= 32, utf8[0..<32].allSatisfy(isLowerHex) else { return .foreign }
        if utf8.count == 32 { return .image }
        guard utf8[32] == UInt8(ascii: "."), (2...1 + CacheKey.maximumExtensionLength).contains(utf8.count - 32) else { return .foreign }
        let ext = utf8[33...]
        if ext.elementsEqual("meta".utf8) { return .sidecar }
        return ext.allSatisfy { isLowerHex($0) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) } ? .image : .foreign
    }

    static func isSidecar(_ name: String) -> Bool { kind(of: name) == .sidecar }

    /// The 32 hex digits an entry's names begin with.
    static func digest(of name: String) -> String { String(name.prefix(32)) }

    /// Two lowercase hex digits: a shard folder's name.
    static func isShard(_ name: String) -> Bool {
        let utf8 = Array(name.utf8)
        return utf8.count == 2 && utf8.allSatisfy(isLowerHex)
    }

    private static func isLowerHex(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }
}
