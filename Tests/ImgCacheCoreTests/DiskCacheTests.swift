import Foundation
import ImgCacheCore
import Testing

/// The disk cache without the network: a store is found by lookup, and anything
/// short of a whole committed entry is a miss.
@Suite final class DiskCacheTests {
    let root: String
    let cache: DiskCache
    let key = CacheKey("http://example.test/a/logo.png")
    static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: 7, count: 100)

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("imgcache-unit-\(UUID().uuidString)").path
        cache = DiskCache(location: CacheLocation(root: root, namespace: try Namespace(validating: "unit")))
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    @discardableResult
    func store(_ bytes: [UInt8] = DiskCacheTests.png) throws -> CacheEntry {
        let pending = try cache.beginStore(for: key)
        try FileSystem.writeAll(pending.descriptor, bytes, path: pending.temporaryPath)
        return try cache.commit(pending) { inode, size in
            EntryMetadata(fileName: "", inode: inode, byteCount: size, key: "", url: key.string, format: .png, storedAt: 1)
        }
    }

    @Test func aStoredEntryIsFoundWithItsBytesAndMetadata() throws {
        let stored = try store()
        let found = try #require(cache.lookup(key, now: 2_000_000_000))
        #expect(found.path == root + "/unit/\(key.shard)/\(key.digest).png")
        #expect(found.metadata == stored.metadata)
        #expect(found.metadata.key == key.string)
        #expect(try Data(contentsOf: URL(fileURLWithPath: found.path)) == Data(Self.png))
    }

    @Test func lookupMarksTheEntryUsed() throws {
        try store()
        _ = cache.lookup(key, now: 2_000_000_000)
        #expect(cache.lookup(key, now: 2_000_000_001)?.lastAccess == 2_000_000_000)
    }

    @Test func anUnknownKeyIsAMiss() {
        #expect(cache.lookup(key, now: 0) == nil)
    }

    @Test func anImageRenamedInByAnotherWriterIsNotPairedWithThisMetadata() throws {
        let entry = try store()
        // Another process's image of the same size lands by rename before its metadata does.
        let other = root + "/other.png"
        try #require(FileManager.default.createFile(atPath: other, contents: Data(Self.png)))
        try FileSystem.rename(other, to: entry.path)
        #expect(cache.lookup(key, now: 0) == nil)
    }

    @Test func theOldMetadataIsRemovedBeforeTheNewImageIsRenamedIn() throws {
        let old = try store()
        // A non-empty folder where the image goes makes the commit's image rename fail,
        // stopping it where a crash could: after step 1, before step 3.
        try FileManager.default.removeItem(atPath: old.path)
        try FileManager.default.createDirectory(atPath: old.path + "/blocker", withIntermediateDirectories: true)
        #expect(throws: SystemError.self) { try self.store(Self.png + [9]) }
        #expect(!FileManager.default.fileExists(atPath: cache.metadataPath(for: key)))
    }

    @Test func bytesThatAreNoLongerTheRecordedFormatAreAMiss() throws {
        let entry = try store()
        let handle = try #require(FileHandle(forWritingAtPath: entry.path))
        try handle.write(contentsOf: Data("<html>!!".utf8))
        try handle.close()
        #expect(cache.lookup(key, now: 0) == nil)
    }

    @Test func metadataForAnotherKeyIsAMiss() throws {
        try store()
        let path = cache.metadataPath(for: key)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        try text.replacingOccurrences(of: "key " + key.string, with: "key http://other/").write(toFile: path, atomically: true, encoding: .utf8)
        #expect(cache.lookup(key, now: 0) == nil)
    }

    @Test func anAbandonedStoreLeavesNoFileBehind() throws {
        do {
            let pending = try cache.beginStore(for: key)
            try FileSystem.writeAll(pending.descriptor, Self.png, path: pending.temporaryPath)
            pending.discard()
        }
        let leftovers = try FileManager.default.subpathsOfDirectory(atPath: root).filter {
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: root + "/" + $0, isDirectory: &isDirectory) && !isDirectory.boolValue
        }
        #expect(leftovers.isEmpty)
        #expect(cache.lookup(key, now: 0) == nil)
    }

    @Test func aSecondStoreReplacesTheFirst() throws {
        try store()
        let newer = Self.png + [1, 2, 3]
        try store(newer)
        let found = try #require(cache.lookup(key, now: 0))
        #expect(found.metadata.byteCount == Int64(newer.count))
        #expect(try Data(contentsOf: URL(fileURLWithPath: found.path)) == Data(newer))
    }
}
