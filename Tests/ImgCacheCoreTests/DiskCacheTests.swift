import Foundation
@testable import ImgCacheCore
import Testing

/// The disk cache without the network, with metadata in an extended attribute
/// and in a sidecar file: a store is found by lookup, and anything short of a
/// whole committed entry is damaged, removed and reported.
@Suite final class DiskCacheTests {
    let root: String
    let key = CacheKey("http://example.test/a/logo.png")
    static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: 7, count: 100)
    static let placements: [DiskCache.MetadataPlacement] = [.automatic, .sidecarFiles]

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("imgcache-unit-\(UUID().uuidString)").path
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    func cache(_ placement: DiskCache.MetadataPlacement) throws -> DiskCache {
        DiskCache(location: CacheLocation(root: root, namespace: try Namespace(validating: "unit")), metadataPlacement: placement)
    }

    @discardableResult
    static func store(_ bytes: [UInt8] = DiskCacheTests.png, key: CacheKey, in cache: DiskCache, storedAt: Double = 1) throws -> CacheEntry {
        try cache.prepareForStores()
        let pending = try cache.beginStore(for: key)
        try FileSystem.writeAll(pending.descriptor, bytes, path: pending.temporaryPath)
        return try cache.commit(pending) { inode, size in
            EntryMetadata(fileName: "", inode: inode, byteCount: size, key: "", url: key.string, format: .png, storedAt: storedAt)
        }
    }

    /// Every regular file under the cache root but the shards' URL logs.
    func regularFiles() throws -> [String] {
        try FileManager.default.subpathsOfDirectory(atPath: root).filter { !$0.hasSuffix("/urls") && !$0.hasSuffix("/CACHEDIR.TAG") }.filter {
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: root + "/" + $0, isDirectory: &isDirectory) && !isDirectory.boolValue
        }.sorted()
    }

    @Test(arguments: placements)
    func aStoredEntryIsFoundWithItsBytesAndMetadata(placement: DiskCache.MetadataPlacement) throws {
        let cache = try cache(placement)
        let stored = try Self.store(key: key, in: cache)
        let found = try #require(cache.lookup(key, now: 2_000_000_000).entry)
        #expect(found.path == root + "/unit/\(key.shard)/\(key.digest).png")
        #expect(found.metadata == stored.metadata)
        #expect(found.metadata.key == key.string)
        #expect(found.placement == (placement == .automatic ? .attribute : .sidecarFile))
        #expect(try Data(contentsOf: URL(fileURLWithPath: found.path)) == Data(Self.png))
        let sidecar = "unit/\(key.shard)/\(key.digest).meta"
        #expect(try regularFiles().contains(sidecar) == (placement == .sidecarFiles))
    }

    @Test(arguments: placements)
    func lookupMarksTheEntryUsed(placement: DiskCache.MetadataPlacement) throws {
        let cache = try cache(placement)
        try Self.store(key: key, in: cache)
        _ = cache.lookup(key, now: 2_000_000_000)
        #expect(cache.lookup(key, now: 2_000_000_001).entry?.lastAccess == 2_000_000_000)
    }

    /// Keys whose entries fall in one shard, the first `count` found.
    static func keysInOneShard(_ count: Int) -> [CacheKey] {
        let keys = (0..<4096).map { CacheKey("http://example.test/same-shard-\($0).png") }
        let shard = keys[0].shardIndex
        return Array(keys.filter { $0.shardIndex == shard }.prefix(count))
    }

    @Test(arguments: placements)
    func aListedShardStillFindsWhatAnotherProcessStoresInIt(_ placement: DiskCache.MetadataPlacement) throws {
        // Two runs on one namespace, each with its own listings (as two processes have);
        // the first lists the shard after a miss, then the second stores in it.
        let namespace = CacheLocation(root: root, namespace: try Namespace(validating: "unit"))
        let lister = DiskCache(location: namespace, metadataPlacement: placement, listsShards: true)
        let writer = DiskCache(location: namespace, metadataPlacement: placement)
        let keys = DiskCacheTests.keysInOneShard(4)
        try DiskCacheTests.store(key: keys[0], in: writer)
        #expect(lister.lookup(keys[1], now: 2).entry == nil)
        #expect(lister.lookup(keys[2], now: 2).entry == nil)
        try DiskCacheTests.store(key: keys[1], in: writer)
        #expect(lister.lookup(keys[1], now: 2).entry != nil, "a store by another process was missed")
        // Its own stores keep its listing current; what it found is found again.
        try DiskCacheTests.store(key: keys[2], in: lister)
        #expect(lister.lookup(keys[2], now: 2).entry != nil)
        #expect(lister.lookup(keys[0], now: 2).entry != nil)
        #expect(lister.lookup(keys[3], now: 2).entry == nil)
        // Removed behind its back: looked for and not found, never served.
        try FileManager.default.removeItem(atPath: try #require(lister.lookup(keys[0], now: 3).entry).path)
        #expect(lister.lookup(keys[0], now: 3).entry == nil)
    }

    @Test func aShardFolderMadeByTheRunIsListedEmptyAndKeptCurrent() throws {
        let cache = DiskCache(location: CacheLocation(root: root, namespace: try Namespace(validating: "unit")), listsShards: true)
        let keys = DiskCacheTests.keysInOneShard(3)
        #expect(cache.lookup(keys[0], now: 1).entry == nil)
        try DiskCacheTests.store(key: keys[0], in: cache)
        #expect(cache.lookup(keys[1], now: 1).entry == nil)
        #expect(cache.lookup(keys[0], now: 1).entry != nil)
        // Stored by a run that keeps no listings (a single fetch): still found.
        let other = DiskCache(location: CacheLocation(root: root, namespace: try Namespace(validating: "unit")))
        try DiskCacheTests.store(key: keys[1], in: other)
        #expect(cache.lookup(keys[1], now: 1).entry != nil)
        #expect(cache.lookup(keys[2], now: 1).entry == nil)
        // The listing answers that miss: a disk that would fail every read is not asked.
        let failing = SystemCallFaults.arm([.attribute, .status, .open, .read, .list], under: root, errno: .ioError)
        defer { SystemCallFaults.disarm(failing) }
        guard case .miss = cache.lookup(keys[2], now: 1) else { Issue.record("the disk was asked"); return }
        guard case .unreadable = cache.lookup(keys[1], now: 1) else { Issue.record("a hit was not read from the disk"); return }
    }

    @Test func aRunOverAListAsksAShardNotMadeYetOnceNotOncePerName() throws {
        let namespace = CacheLocation(root: root, namespace: try Namespace(validating: "unit"))
        let keys = (0..<64).map { CacheKey("http://example.test/spread-\($0).png") }
        let stored = keys[0], elsewhere = try #require(keys.first { $0.shardIndex != stored.shardIndex })
        try DiskCacheTests.store(key: stored, in: DiskCache(location: namespace))
        // A cold prefetch: the namespace is there, its shard is not. One status call answers for
        // every name; the names' attributes are never asked (an armed failure would show).
        let lister = DiskCache(location: namespace, listsShards: true)
        let failing = SystemCallFaults.arm([.attribute], under: root, errno: .ioError)
        guard case .miss = lister.lookup(elsewhere, now: 1) else {
            SystemCallFaults.disarm(failing)
            Issue.record("the names were looked for in a shard that is not there")
            return
        }
        #expect(SystemCallFaults.disarm(failing) == 0)
        // A single lookup opens the namespace folder and needs no check of the shard; it still finds the entry.
        #expect(DiskCache(location: namespace).lookup(stored, now: 2).entry != nil)
    }

    @Test func aLockFileCutShortUnderARunIsSurvivedAndItsListingsGivenUp() throws {
        let namespace = CacheLocation(root: root, namespace: try Namespace(validating: "unit"))
        let lister = DiskCache(location: namespace, listsShards: true)
        let keys = DiskCacheTests.keysInOneShard(3)
        try DiskCacheTests.store(key: keys[0], in: lister)
        #expect(lister.lookup(keys[1], now: 1).entry == nil)
        // Another program empties the mapped lock file: the next use of the counters faults.
        #expect(truncate(lister.directory + "/lock", 0) == 0)
        try DiskCacheTests.store(key: keys[2], in: lister)
        #expect(lister.lookup(keys[2], now: 1).entry != nil)
        // Another run stores meanwhile (growing the file back): found, the listing no longer trusted.
        let writer = DiskCache(location: namespace)
        try DiskCacheTests.store(key: keys[1], in: writer)
        #expect(lister.lookup(keys[1], now: 2).entry != nil)
    }

    @Test func aFailureRecordedByAnotherProcessIsSeenThroughTheListing() throws {
        let namespace = CacheLocation(root: root, namespace: try Namespace(validating: "unit"))
        let lister = DiskCache(location: namespace, listsShards: true), writer = DiskCache(location: namespace)
        try lister.prepareForStores()
        let listed = FailedURLStore(namespaceDirectory: lister.directory, listings: lister.listings)
        let recording = FailedURLStore(namespaceDirectory: writer.directory, listings: writer.listings)
        let (first, second) = (CacheKey("http://example.test/a"), CacheKey("http://example.test/b"))
        try recording.record(first, url: first.string, reason: "HTTP 404", now: 10)
        #expect(listed.lookup(first, ttl: .never, now: 11)?.count == 1)
        #expect(listed.lookup(second, ttl: .never, now: 11) == nil)
        let stamp = try #require(lister.listings.stamp(second.shardIndex))
        #expect(!lister.listings.changed(since: stamp))
        try recording.record(second, url: second.string, reason: "HTTP 404", now: 12)
        #expect(lister.listings.changed(since: stamp))
        #expect(listed.lookup(second, ttl: .never, now: 13)?.first?.reason == "HTTP 404")
        // With the listing current, a URL without a record asks the disk nothing.
        let third = CacheKey("http://example.test/c")
        #expect(listed.lookup(third, ttl: .never, now: 13) == nil)
        let failing = SystemCallFaults.arm([.status, .open, .read, .list], under: root, errno: .ioError)
        defer { SystemCallFaults.disarm(failing) }
        #expect(listed.lookup(third, ttl: .never, now: 13) == nil)
        #expect(SystemCallFaults.disarm(failing) == 0)
    }

    @Test func anUnknownKeyIsAMiss() throws {
        #expect(try cache(.automatic).lookup(key, now: 0) == .miss)
    }

    @Test func anImageRenamedInByAnotherWriterIsNotPairedWithASidecar() throws {
        let cache = try cache(.sidecarFiles)
        let entry = try Self.store(key: key, in: cache)
        // Another process's image of the same size lands by rename before its sidecar does.
        let other = root + "/other.png"
        try #require(FileManager.default.createFile(atPath: other, contents: Data(Self.png.dropLast() + [8])))
        try FileSystem.rename(other, to: entry.path)
        #expect(cache.lookup(key, now: 0) == .damaged(path: entry.path, reason: "its metadata was written for another file", removed: true))
        #expect(!FileManager.default.fileExists(atPath: entry.path))
    }

    @Test func theOldSidecarIsRemovedBeforeTheNewImageIsRenamedIn() throws {
        let cache = try cache(.sidecarFiles)
        let old = try Self.store(key: key, in: cache)
        // A non-empty folder where the image goes makes the commit's image rename fail,
        // stopping it where a crash could: after step 1, before step 3.
        try FileManager.default.removeItem(atPath: old.path)
        try FileManager.default.createDirectory(atPath: old.path + "/blocker", withIntermediateDirectories: true)
        #expect(throws: SystemError.self) { try Self.store(Self.png + [9], key: self.key, in: cache) }
        #expect(!FileManager.default.fileExists(atPath: cache.sidecarPath(for: key)))
    }

    @Test(arguments: placements)
    func bytesThatAreNoLongerTheRecordedFormatAreHealed(placement: DiskCache.MetadataPlacement) throws {
        let cache = try cache(placement)
        let entry = try Self.store(key: key, in: cache)
        let handle = try #require(FileHandle(forWritingAtPath: entry.path))
        try handle.write(contentsOf: Data("<html>!!".utf8))
        try handle.close()
        #expect(cache.lookup(key, now: 0) == .damaged(path: entry.path, reason: "its bytes are no longer a PNG image", removed: true))
        #expect(try regularFiles() == ["unit/lock"])
        #expect(cache.lookup(key, now: 0) == .miss)
    }

    @Test(arguments: placements)
    func aTruncatedEntryIsHealed(placement: DiskCache.MetadataPlacement) throws {
        let cache = try cache(placement)
        let entry = try Self.store(key: key, in: cache)
        try #require(truncate(entry.path, 50) == 0)
        #expect(cache.lookup(key, now: 0) == .damaged(path: entry.path, reason: "it is truncated (50 of 108 bytes)", removed: true))
        #expect(try regularFiles() == ["unit/lock"])
    }

    @Test func anImageCopiedWithoutItsAttributeIsHealed() throws {
        let cache = try cache(.automatic)
        let entry = try Self.store(key: key, in: cache)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: entry.path))
        try FileManager.default.removeItem(atPath: entry.path)
        try bytes.write(to: URL(fileURLWithPath: entry.path))
        #expect(cache.lookup(key, now: 0) == .damaged(path: entry.path, reason: "its metadata is missing", removed: true))
    }

    @Test(arguments: placements)
    func metadataForAnotherKeyIsDamage(placement: DiskCache.MetadataPlacement) throws {
        let cache = try cache(placement)
        let entry = try Self.store(key: key, in: cache)
        var metadata = entry.metadata
        metadata.key = "http://other/"
        _ = try cache.replaceMetadata(of: entry, with: metadata, key: key, now: 5)
        #expect(cache.lookup(key, now: 0) == .damaged(path: entry.path, reason: "its metadata belongs to another key", removed: true))
    }

    @Test(arguments: placements)
    func replacingMetadataKeepsTheFile(placement: DiskCache.MetadataPlacement) throws {
        let cache = try cache(placement)
        let entry = try Self.store(key: key, in: cache)
        var metadata = entry.metadata
        metadata.etag = "\"v2\""
        _ = try cache.replaceMetadata(of: entry, with: metadata, key: key, now: 5)
        let found = try #require(cache.lookup(key, now: 6).entry)
        #expect(found.metadata.etag == "\"v2\"")
        #expect(found.lastAccess == 5)
    }

    @Test(arguments: placements)
    func aRefreshDoesNotRewriteAnEntryStoredMeanwhile(placement: DiskCache.MetadataPlacement) throws {
        let cache = try cache(placement)
        try Self.store(key: key, in: cache)
        let old = try #require(cache.lookup(key, now: 1).entry)
        let newer = try Self.store(Self.png + [4, 5], key: key, in: cache)
        var stale = old.metadata
        stale.etag = "\"old\""
        #expect(try cache.replaceMetadata(of: old, with: stale, key: key, now: 5) == nil)
        #expect(cache.lookup(key, now: 6).entry?.metadata == newer.metadata)
    }

    @Test func aLinkInAShardsPlaceIsNotFollowedNorHealedThrough() throws {
        let cache = try cache(.automatic)
        let outside = root + "/outside"
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        try Data("not an image".utf8).write(to: URL(fileURLWithPath: outside + "/" + key.fileName))
        try cache.prepareForStores()
        try FileManager.default.createSymbolicLink(atPath: cache.shardDirectory(for: key), withDestinationPath: outside)
        #expect(cache.lookup(key, now: 0) == .miss)
        #expect(FileManager.default.fileExists(atPath: outside + "/" + key.fileName))
        let refusal = #expect(throws: SystemError.self) { try Self.store(key: self.key, in: cache) }
        #expect(refusal?.description.hasSuffix("is a symbolic link; imgcache does not follow links inside the cache") == true,
                "\(String(describing: refusal))")
    }

    @Test func aLinkInAShardsPlaceIsNotFollowedToAWholeEntryOnceTheFolderIsOpen() throws {
        let cache = try cache(.automatic)
        // A hit elsewhere first: entries are then opened through the namespace folder.
        let other = try #require((0..<64).lazy.map { CacheKey("http://example.test/other-\($0).png") }.first { $0.shard != self.key.shard })
        try Self.store(key: other, in: cache)
        #expect(cache.lookup(other, now: 1).entry != nil)
        // A whole entry for the key in another namespace, its shard linked into this one.
        let elsewhere = DiskCache(location: CacheLocation(root: root, namespace: try Namespace(validating: "elsewhere")))
        try Self.store(key: key, in: elsewhere)
        try FileManager.default.createSymbolicLink(atPath: cache.shardDirectory(for: key), withDestinationPath: elsewhere.shardDirectory(for: key))
        #expect(cache.lookup(key, now: 2) == .miss)
        #expect(elsewhere.lookup(key, now: 3).entry != nil)
    }

    @Test func anAbandonedStoreLeavesNoFileBehind() throws {
        let cache = try cache(.automatic)
        do {
            let pending = try cache.beginStore(for: key)
            try FileSystem.writeAll(pending.descriptor, Self.png, path: pending.temporaryPath)
            pending.discard()
        }
        // The namespace's lock file, made with its first store, is all there is.
        #expect(try regularFiles() == ["unit/lock"])
        #expect(cache.lookup(key, now: 0) == .miss)
    }

    @Test(arguments: placements)
    func aSecondStoreReplacesTheFirst(placement: DiskCache.MetadataPlacement) throws {
        let cache = try cache(placement)
        try Self.store(key: key, in: cache)
        let newer = Self.png + [1, 2, 3]
        try Self.store(newer, key: key, in: cache)
        let found = try #require(cache.lookup(key, now: 0).entry)
        #expect(found.metadata.byteCount == Int64(newer.count))
        #expect(try Data(contentsOf: URL(fileURLWithPath: found.path)) == Data(newer))
    }

    @Test func aLongURLStaysOutOfTheAttributeWhichFitsTheInode() throws {
        let cache = try cache(.automatic)
        let long = CacheKey("http://example.test/" + String(repeating: "x", count: 9000) + ".png")
        let entry = try Self.store(key: long, in: cache)
        #expect(entry.placement == .attribute)
        #expect(cache.lookup(long, now: 0).entry?.metadata.key == long.string)
        // 64 bytes of value is what ext4 keeps inside a 256-byte inode.
        let attribute = try #require(try FileSystem.attribute("user.imgcache", of: entry.path))
        #expect(attribute.count <= 64, "\(attribute.count) bytes")
        // The URL is in the shard's log, read back with the entry.
        #expect(EntryMetadata.stored(atImage: entry.path)?.url == long.string)
    }

    @Test func metadataTooBigForAnAttributeGoesToASidecar() throws {
        let cache = try cache(.automatic)
        let pending = try cache.beginStore(for: key)
        try FileSystem.writeAll(pending.descriptor, Self.png, path: pending.temporaryPath)
        // An ETag of 9000 bytes is more than an attribute holds.
        let entry = try cache.commit(pending) { inode, size in
            EntryMetadata(fileName: "", inode: inode, byteCount: size, key: self.key.string, url: self.key.string,
                          etag: "\"" + String(repeating: "e", count: 9000) + "\"", format: .png, storedAt: 1)
        }
        #expect(entry.placement == .sidecarFile)
        #expect(cache.lookup(key, now: 0).entry?.metadata.etag?.count == 9002)
    }

    @Test func aReadOnlyFolderAnswersWithoutBeingWritten() throws {
        let cache = try cache(.automatic)
        let entry = try Self.store(key: key, in: cache)
        try #require(chmod(entry.path, 0o444) == 0)
        let before = try FileManager.default.attributesOfItem(atPath: entry.path)[.modificationDate] as? Date
        let readOnly = ReadOnlyCache(directory: cache.directory)
        #expect(readOnly.lookup(key)?.path == entry.path)
        #expect(try FileManager.default.attributesOfItem(atPath: entry.path)[.modificationDate] as? Date == before)
        #expect(readOnly.lookup(CacheKey("http://example.test/other.png")) == nil)
    }

    @Test func aReadOnlyFolderServesAnImageWithoutMetadataByItsHeader() throws {
        let shipped = root + "/shipped"
        let path = shipped + "/\(key.shard)/\(key.fileName)"
        try FileManager.default.createDirectory(atPath: shipped + "/\(key.shard)", withIntermediateDirectories: true)
        let logo = try Data(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fixtures/images/logo.png"))
        try logo.write(to: URL(fileURLWithPath: path))
        let found = try #require(ReadOnlyCache(directory: shipped).lookup(key))
        #expect(found.metadata.format == .png)
        #expect(found.metadata.byteCount == Int64(logo.count))
        // Bytes that are not an image are not served, and not removed either.
        try Data("<html>".utf8).write(to: URL(fileURLWithPath: path))
        #expect(ReadOnlyCache(directory: shipped).lookup(key) == nil)
        #expect(FileManager.default.fileExists(atPath: path))
    }
}
