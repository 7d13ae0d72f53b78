#if canImport(Glibc)
import Glibc
#endif

/// One entry as `imgcache list` shows it.
public struct ListedEntry: Sendable {
    /// The image file.
    public let path: String
    public let inode: UInt64
    /// The URL it was stored from (a password in it as `***`); nil when the
    /// shard's URL log lost its line.
    public let url: String?
    /// The transformer key of a thumbnail or shrunk copy; nil for the image as served.
    public let transform: String?
    /// The Accept header it was asked with, when not the default.
    public let accept: String?
    public let bytes: Int64
    public let allocatedBytes: Int64
    public let format: ImageFormat?
    public let width: Int?
    public let height: Int?
    public let frames: Int?
    /// The last use (the file's modification time).
    public let lastUse: Double
    /// When it was stored; nil when its metadata cannot be read.
    public let storedAt: Double?
    public let contentType: String?
    /// The server opted the image out of AI training (X-Robots-Tag noai).
    public var optedOut = false
}

/// The entries of a namespace, read a few shards at a time on a few threads
/// (the kernel's lookups dominate) and handed over in shard order: memory
/// stays that of a few shards however large the namespace. Per entry, an
/// `lstat` (from the shard's listing) and its metadata attribute (or
/// sidecar); per shard, its URL log. Read without locks: an entry removed
/// meanwhile is left out.
public enum CacheListing {
    /// Calls `body` with each entry of the namespace in `directory`, shard by
    /// shard in order; an absent namespace has none. Returns the shards that
    /// could not be read, which are left out rather than ending the listing.
    @discardableResult
    public static func forEach(in directory: String, _ body: (ListedEntry) throws(SystemError) -> Void) throws(SystemError) -> [SystemError] {
        let namespace: DirectoryHandle
        do { namespace = try DirectoryHandle(directory) } catch {
            if error.errno == .noSuchFile { return [] }
            throw error
        }
        let attributes = FileSystem.supportsAttributes(directory)
        let shards = try namespace.list()
            .filter { EntryNames.isShard($0.name) && $0.type != UInt8(DT_LNK) }  // a file in a shard's place fails, said
            .map(\.name).sorted()
        let batch = 16
        var unreadable: [SystemError] = []
        for start in stride(from: 0, to: shards.count, by: batch) {
            let group = Array(shards[start..<min(shards.count, start + batch)])
            for outcome in try read(group, in: directory, attributes: attributes) {
                switch outcome {
                case .success(let entries): for entry in entries { try body(entry) }
                case .failure(let error): unreadable.append(error)
                }
            }
        }
        return unreadable
    }

    /// The entries of `shards`, each shard's in name order (or why it could not be read), read on a few threads.
    private static func read(_ shards: [String], in directory: String, attributes: Bool) throws(SystemError) -> [Result<[ListedEntry], SystemError>] {
        try ShardWorkers.map(shards.count) { (index) throws(SystemError) -> Result<[ListedEntry], SystemError> in
            do throws(SystemError) { return .success(try entriesOf(shard: shards[index], in: directory, attributes: attributes)) } catch {
                return .failure(error)
            }
        }.map { $0 ?? .success([]) }
    }

    private static func entriesOf(shard: String, in directory: String, attributes: Bool) throws(SystemError) -> [ListedEntry] {
        let listing = try ShardListing.read(namespace: directory, shard: shard)
        guard !listing.images.isEmpty else { return [] }
        let shardPath = directory + "/" + shard
        let logged = URLLog.read(shardPath: shardPath)
        var entries: [ListedEntry] = []
        for image in listing.images.sorted(by: { $0.name < $1.name }) where attributes || image.hasSidecar {
            let path = shardPath + "/" + image.name
            let metadata = CacheListing.metadata(of: path, name: image.name, logged: logged)
            let key = metadata?.key ?? ""
            let variant = KeyVariant(key: key)
            let format = metadata?.format ?? image.name.split(separator: ".").dropFirst().last.flatMap { ImageFormat(fileExtension: $0) }
            entries.append(ListedEntry(
                path: path, inode: image.inode, url: metadata.flatMap { $0.url.isEmpty ? nil : $0.url }, transform: variant?.transform,
                accept: variant?.accept,
                bytes: image.size, allocatedBytes: image.allocatedSize, format: format,
                width: metadata?.uprightSize.width, height: metadata?.uprightSize.height, frames: metadata?.frameCount,
                lastUse: image.modified, storedAt: metadata?.storedAt, contentType: metadata?.contentType,
                optedOut: metadata?.optedOut ?? false))
        }
        return entries
    }

    /// The metadata of the image at `path`: its attribute with the URL from
    /// the shard's log (`logged`, by digest), or its sidecar file.
    static func metadata(of path: String, name: String, logged: [String: String]) -> EntryMetadata? {
        let digest = EntryNames.digest(of: name)
        if let bytes = try? FileSystem.attribute(EntryReader.attributeName, of: path, limit: EntryReader.metadataLimit) {
            guard EntryAttribute.isCompact(bytes) else { return EntryMetadata(parsing: String(decoding: bytes, as: UTF8.self)) }
            // The log's line for the file's digest names it (with --key-filter
            // the key is not the URL, so the attribute's key check cannot be used);
            // without one, everything but the URL.
            guard var metadata = EntryAttribute.decode(bytes, fileName: name, key: nil)?.metadata else { return nil }
            let entry = logged[digest].map(URLLog.split)
            metadata.url = entry?.url ?? ""
            metadata.key = entry?.key ?? ""
            return metadata
        }
        guard let sidecar = try? FileSystem.readFile(FileSystem.parentDirectory(of: path) + "/" + digest + ".meta",
                                                     limit: EntryReader.metadataLimit) else { return nil }
        return EntryMetadata(parsing: String(decoding: sidecar, as: UTF8.self))
    }
}

extension ListedEntry {
    /// The fields `list --json` and `remove --json` share: which entry, and its size.
    public var json: JSONObject {
        var object = JSONObject()
        object.add("url", url)
        object.add("transform", transform)
        object.add("accept", accept)
        object.add("path", path)
        object.add("bytes", bytes)
        return object
    }
}
