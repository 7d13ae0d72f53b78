/// A cache folder that is consulted but never written (SDWebImage's
/// addReadOnlyCachePath): for example a namespace folder shipped with an
/// application. Nothing in it is touched, healed or removed.
///
/// Its layout is a namespace's (`<shard>/<digest>[.<ext>]`). Packaging tools
/// often drop extended attributes, so an image file found without metadata is
/// still served when its bytes are a supported image whose header decodes.
public struct ReadOnlyCache: Sendable {
    public let directory: String
    let reader: EntryReader

    public init(directory: String) {
        var trimmed = directory
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
        self.directory = trimmed
        reader = EntryReader(directory: trimmed)
    }

    /// The whole entry for `key`, if this folder has one.
    public func lookup(_ key: CacheKey) -> CacheEntry? {
        switch reader.check(key) {
        case .whole(let entry): return entry
        case .absent, .failed: return nil
        case .damaged(let path, _, let metadataMissing):
            return metadataMissing ? bareImage(at: path, for: key) : nil
        }
    }

    /// An image file without metadata, described from its own header.
    private func bareImage(at path: String, for key: CacheKey) -> CacheEntry? {
        guard let status = try? FileSystem.status(path), status.isRegularFile,
              status.size <= Int64(ReadOnlyCache.bareImageLimit),
              let bytes = try? FileSystem.readFile(path, limit: ReadOnlyCache.bareImageLimit),
              let header = try? ImageHeader.probe(bytes) else { return nil }
        let metadata = EntryMetadata(fileName: String(path.split(separator: "/").last ?? ""), inode: status.inode, byteCount: status.size,
                                     key: key.storedForm, url: key.storedForm, format: header.format,
                                     width: header.width, height: header.height, frameCount: header.frameCount,
                                     storedAt: status.modified)
        return CacheEntry(path: path, metadata: metadata, lastAccess: status.modified, placement: .attribute, inode: status.inode)
    }

    /// Largest bare image read whole to check its header.
    static let bareImageLimit = 64 * 1024 * 1024
}
