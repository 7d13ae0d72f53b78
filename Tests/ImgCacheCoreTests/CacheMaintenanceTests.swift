import Foundation
import Synchronization
import ImgCacheCore
import Testing

/// clean, clear and the summary of cache-info, on a namespace built by the test
/// with known last-use times.
@Suite final class CacheMaintenanceTests {
    let root: String
    let cache: DiskCache
    let now: Double = 2_000_000_000

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("imgcache-clean-\(UUID().uuidString)").path
        cache = DiskCache(location: CacheLocation(root: root, namespace: try Namespace(validating: "unit")))
    }

    deinit {
        // A test may leave a read-only folder; make it removable.
        chmod(root, 0o700)
        try? FileManager.default.removeItem(atPath: root)
    }

    /// Stores `key` with `size` bytes and marks it last used at `lastUse`.
    @discardableResult
    func entry(_ name: String, size: Int = 100, lastUse: Double) throws -> CacheEntry {
        let key = CacheKey("http://example.test/\(name).png")
        let stored = try DiskCacheTests.store(DiskCacheTests.png + [UInt8](repeating: 1, count: size), key: key, in: cache)
        try FileSystem.setModificationTime(stored.path, to: lastUse)
        return stored
    }

    func allocated(_ path: String) -> Int64 {
        var info = stat()
        return lstat(path, &info) == 0 ? Int64(info.st_blocks) * 512 : -1
    }

    func present(_ entries: [CacheEntry]) -> [Bool] {
        entries.map { FileManager.default.fileExists(atPath: $0.path) }
    }

    func clean(maxSize: SizeLimit = .unlimited, maxAge: AgeLimit = .never, dryRun: Bool = false) throws -> CacheCleaner.Report {
        let limits = CacheLimits(maxSize: maxSize, maxAge: maxAge, maxSizeSource: .commandLine, maxAgeSource: .commandLine)
        guard case .cleaned(let report) = try CacheCleaner(cache: cache).clean(limits: limits, now: now, dryRun: dryRun) else {
            throw CocoaError(.fileLocking)
        }
        return report
    }

    @Test func aCleanToldToStopStopsBetweenShardsAndCountsWhatItRemoved() throws {
        let entries = try (0..<40).map { try entry("old\($0)", lastUse: now - 30 * 86_400) }
        let shards = Set(entries.map { URL(fileURLWithPath: $0.path).deletingLastPathComponent().lastPathComponent })
        #expect(shards.count > 3)
        // Told to stop once three shards were done.
        let asked = Mutex(0)
        let limits = CacheLimits(maxSize: .unlimited, maxAge: .seconds(86_400), maxSizeSource: .commandLine, maxAgeSource: .commandLine)
        guard case .cleaned(let report) = try CacheCleaner(cache: cache).clean(limits: limits, now: now, shouldStop: {
            asked.withLock { $0 += 1; return $0 > 3 }
        }) else { throw CocoaError(.fileLocking) }
        #expect(report.interrupted)
        let gone = entries.filter { !FileManager.default.fileExists(atPath: $0.path) }
        #expect(gone.count == report.expired.count && gone.count > 0 && gone.count < entries.count, "\(gone.count) of \(entries.count)")
        #expect(report.remaining.count == entries.count - gone.count)
    }

    @Test func anEntryUsedWhileTheCleanRunsIsPutBackWhole() throws {
        // Two entries in one shard, both expired when scanned; one is hit after the scan
        // and before its shard's removals (the clean asks whether to stop just then).
        var used: CacheEntry?, other: CacheEntry?
        for index in 0..<600 where other == nil {
            let stored = try entry("e\(index)", lastUse: now - 30 * 86_400)
            if used == nil { used = stored } else if FileSystem.parentDirectory(of: stored.path) == FileSystem.parentDirectory(of: used!.path) { other = stored }
        }
        let (kept, victim) = (try #require(used), try #require(other))
        let keptKey = try #require((0..<600).lazy.map { CacheKey("http://example.test/e\($0).png") }.first { self.cache.imagePath(for: $0) == kept.path })
        let limits = CacheLimits(maxSize: .unlimited, maxAge: .seconds(86_400), maxSizeSource: .commandLine, maxAgeSource: .commandLine)
        let hit = Mutex(false)
        guard case .cleaned(let report) = try CacheCleaner(cache: cache).clean(limits: limits, now: now, shouldStop: {
            hit.withLock { done in
                if !done, case .hit = self.cache.lookup(keptKey, now: self.now) { done = true }
            }
            return false
        }) else { throw CocoaError(.fileLocking) }
        #expect(hit.withLock { $0 })
        #expect(report.spared >= 1)
        #expect(FileManager.default.fileExists(atPath: kept.path), "the used entry was removed")
        #expect(!FileManager.default.fileExists(atPath: victim.path), "the unused one was kept")
        guard case .hit(let again) = cache.lookup(keptKey, now: now + 1) else { Issue.record("the kept entry is no longer whole"); return }
        #expect(again.path == kept.path)
        let folder = FileSystem.parentDirectory(of: kept.path)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasPrefix("tmp.") }.isEmpty)
    }

    @Test func aDryRunListsWhatWouldGoAndWhy() throws {
        let old = try entry("old", lastUse: now - 30 * 86_400)
        _ = try entry("new", lastUse: now)
        let report = try clean(maxAge: .seconds(86_400), dryRun: true)
        #expect(report.planned.map(\.path) == [old.path])
        #expect(report.planned.first?.reason == .expired && report.planned.first?.url == "http://example.test/old.png")
        #expect(FileManager.default.fileExists(atPath: old.path))
    }

    @Test func twoRunsRememberingAtOnceBothKeepWhatTheySaved() {
        // Two runs change the settings 200 times each at once, each change building on
        // what it read: one counts up a size limit, the other adds a remote store. Each
        // read-change-save holds the namespace lock, so no change undoes another.
        let cache = self.cache
        DispatchQueue.concurrentPerform(iterations: 2) { side in
            for round in 0..<200 {
                _ = try? cache.updateSettings { settings in
                    if side == 0 {
                        guard case .bytes(let count)? = settings.maxSize else { settings.maxSize = .bytes(1); return }
                        settings.maxSize = .bytes(count + 1)
                    } else {
                        settings.remotes = (settings.remotes ?? []) + ["http://127.0.0.1:1/\(round)"]
                    }
                }
            }
        }
        let saved = NamespaceSettings.load(from: cache.directory)
        #expect(saved.maxSize == .bytes(200))
        #expect(saved.remotes?.count == 200)
    }

    @Test func theAgeBoundaryIsExact() throws {
        let atLimit = try entry("a", lastUse: now - 100)
        let justInside = try entry("b", lastUse: now - 99.5)
        let report = try clean(maxAge: .seconds(100))
        #expect(present([atLimit, justInside]) == [false, true])
        #expect(report.expired.count == 1)
        #expect(report.remaining.count == 1)
    }

    @Test func overTheSizeLimitTheLeastRecentlyUsedGoUntilUnderHalf() throws {
        // Eight entries of one size; the fifth and sixth oldest share a last use,
        // so the path decides which of them goes.
        var entries: [CacheEntry] = []
        for (index, time) in [1.0, 2, 3, 4, 5, 5, 7, 8].enumerated() {
            entries.append(try entry("e\(index)", lastUse: now - 1000 + time))
        }
        let unit = allocated(entries[0].path)
        #expect(entries.allSatisfy { allocated($0.path) == unit })
        // 8 units > 7.5 units: remove until at most 3.75 units remain, so five go.
        let report = try clean(maxSize: .bytes(unit * 15 / 2))
        let tied = [entries[4], entries[5]].sorted { relative($0.path) < relative($1.path) }
        let expectedGone = Set(entries[0..<4].map(\.path) + [tied[0].path])
        for entry in entries {
            #expect(FileManager.default.fileExists(atPath: entry.path) == !expectedGone.contains(entry.path), "\(entry.path)")
        }
        #expect(report.evicted.count == 5)
        #expect(report.evicted.allocatedBytes == unit * 5)
        #expect(report.remaining.allocatedBytes == unit * 3)
    }

    func relative(_ path: String) -> String { String(path.dropFirst(cache.directory.count + 1)) }

    @Test func underTheSizeLimitNothingIsEvicted() throws {
        let kept = try entry("a", lastUse: now - 10)
        let report = try clean(maxSize: .bytes(allocated(kept.path)))
        #expect(report.evicted.count == 0)
        #expect(present([kept]) == [true])
    }

    @Test func aDryRunReportsTheSameAndChangesNothing() throws {
        for index in 0..<6 { try entry("d\(index)", lastUse: now - Double(index) * 50) }
        let before = try listing()
        let dry = try clean(maxSize: .bytes(3 * allocated(cache.imagePath(for: CacheKey("http://example.test/d0.png")))), maxAge: .seconds(200), dryRun: true)
        #expect(try listing() == before)
        let real = try clean(maxSize: .bytes(3 * allocated(cache.imagePath(for: CacheKey("http://example.test/d0.png")))), maxAge: .seconds(200))
        #expect(dry.expired == real.expired)
        #expect(dry.evicted == real.evicted)
        #expect(dry.remaining == real.remaining)
        #expect(real.expired.count == 2)
    }

    func listing() throws -> [String: Date] {
        var result: [String: Date] = [:]
        for path in try FileManager.default.subpathsOfDirectory(atPath: root) {
            result[path] = try FileManager.default.attributesOfItem(atPath: root + "/" + path)[.modificationDate] as? Date
        }
        return result
    }

    @Test func cleanRemovesAbandonedTemporariesAndLeftoversButNotLiveOnes() throws {
        let kept = try entry("k", lastUse: now)
        let shard = FileSystem.parentDirectory(of: kept.path)
        // A dead writer's file (pid 999999999 cannot exist), one of this very process, an old one of another host.
        let token = try hostToken()
        let dead = shard + "/tmp.download.\(token)-999999999.abc"
        let live = shard + "/tmp.download.\(token)-\(getpid()).abc"
        let foreignHost = shard + "/tmp.download.00000000-1.abc"
        let orphanSidecar = shard + "/0123456789abcdef0123456789abcdef.meta"
        for path in [dead, live, foreignHost, orphanSidecar] {
            try Data("x".utf8).write(to: URL(fileURLWithPath: path))
            try FileSystem.setModificationTime(path, to: now)
        }
        try FileSystem.setModificationTime(foreignHost, to: now - TemporaryFile.abandonedAfter - 1)
        let report = try clean()
        #expect(report.temporaries.count == 2)
        #expect(report.leftovers == 1)
        #expect([dead, live, foreignHost, orphanSidecar, kept.path].map(FileManager.default.fileExists(atPath:)) == [false, true, false, false, true])
    }

    /// This process's host token, read back from a temporary file name it makes.
    func hostToken() throws -> String {
        let pending = try cache.beginStore(for: CacheKey("http://example.test/token"))
        defer { pending.discard() }
        let name = String(pending.temporaryPath.split(separator: "/").last!)
        return String(name.split(separator: ".")[2].split(separator: "-")[0])
    }

    @Test func aPlantedLinkIsRemovedAndItsTargetKept() throws {
        let kept = try entry("k", lastUse: now)
        let outside = root + "/outside"
        try FileManager.default.createDirectory(atPath: outside + "/sub", withIntermediateDirectories: true)
        try Data("precious".utf8).write(to: URL(fileURLWithPath: outside + "/0123456789abcdef0123456789abcdef.png"))
        // A link in a shard's place and a link in an entry's place.
        try FileManager.default.createSymbolicLink(atPath: cache.directory + "/ab", withDestinationPath: outside)
        try FileManager.default.createSymbolicLink(atPath: FileSystem.parentDirectory(of: kept.path) + "/fedcba9876543210fedcba9876543210.png",
                                                   withDestinationPath: outside + "/0123456789abcdef0123456789abcdef.png")
        _ = try clean(maxAge: .seconds(1))
        let cleared = try CacheClearer(cache: cache).clear(now: now)
        #expect(cleared.entries.count == 1)
        #expect(try String(contentsOfFile: outside + "/0123456789abcdef0123456789abcdef.png", encoding: .utf8) == "precious")
        #expect(FileManager.default.fileExists(atPath: outside + "/sub"))
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: cache.directory + "/ab")) == nil)
    }

    @Test func clearRemovesEveryEntryAndKeepsSettingsAndFailures() throws {
        for index in 0..<20 { try entry("c\(index)", lastUse: now) }
        try NamespaceSettings(maxSize: .bytes(1_000_000)).save(to: cache.directory)
        let failed = FailedURLStore(namespaceDirectory: cache.directory)
        try failed.record(CacheKey("http://example.test/404"), url: "http://example.test/404", reason: "HTTP 404", now: now)
        let report = try CacheClearer(cache: cache).clear(now: now)
        #expect(report.entries.count == 20)
        let summary = try CacheSummary.summarize(cache, now: now)
        #expect(summary.entries.count == 0)
        #expect(summary.limits.maxSize == .bytes(1_000_000))
        #expect(summary.failedURLs == 1)
    }

    @Test func entriesStoredByARunThatOutlivesAClearKeepTheirURLs() throws {
        // Another process's cache: it keeps each shard's URL log open between stores.
        let storing = DiskCache(location: cache.location)
        let first = CacheKey("http://example.test/first.png")
        _ = try DiskCacheTests.store(DiskCacheTests.png, key: first, in: storing)
        _ = try CacheClearer(cache: cache).clear(now: now)
        // A key of the same shard, stored by the same process after the clear.
        let later = (0..<10_000).lazy.map { CacheKey("http://example.test/later\($0).png") }
            .first { $0.digest.prefix(2) == first.digest.prefix(2) }!
        _ = try DiskCacheTests.store(DiskCacheTests.png, key: later, in: storing)
        var urls: [String?] = []
        let problems = try CacheListing.forEach(in: cache.directory) { urls.append($0.url) }
        #expect(problems.isEmpty && urls == [later.string])
    }

    @Test func aClearThatCannotEmptyAShardCountsNothingAndSaysTheCacheIsUnwritable() throws {
        let stored = try entry("w", lastUse: now)
        let shard = FileSystem.parentDirectory(of: stored.path)
        // Root writes through a folder's mode bits, not through an immutable folder.
        func immutable(_ on: Bool) throws -> Int32 {
            let chattr = Process()
            chattr.executableURL = URL(fileURLWithPath: "/usr/bin/chattr")
            chattr.arguments = [on ? "+i" : "-i", shard]
            try chattr.run()
            chattr.waitUntilExit()
            return chattr.terminationStatus
        }
        if geteuid() == 0 {
            try #require(try immutable(true) == 0)
        } else {
            chmod(shard, 0o500)
        }
        defer { if geteuid() == 0 { _ = try? immutable(false) } else { chmod(shard, 0o700) } }
        let report = try CacheClearer(cache: cache).clear(now: now)
        #expect(report.entries.count == 0 && report.unwritable && report.unreadableShards.count == 1)
        #expect(FileManager.default.fileExists(atPath: stored.path))
    }

    @Test func theSummaryAddsUpWhatIsOnDisk() throws {
        var bytes: Int64 = 0, blocks: Int64 = 0
        for index in 0..<30 {
            let stored = try entry("s\(index)", size: index * 1000, lastUse: now - Double(index))
            bytes += stored.metadata.byteCount
            blocks += allocated(stored.path)
        }
        let summary = try CacheSummary.summarize(cache, now: now)
        #expect(summary.entries.count == 30)
        #expect(summary.entries.bytes == bytes)
        #expect(summary.entries.allocatedBytes == blocks)
        #expect(summary.oldestAccess == now - 29)
        #expect(summary.newestAccess == now)
    }

    @Test func rememberedLimitsComeBackAndTheCommandLineWins() throws {
        try FileManager.default.createDirectory(atPath: cache.directory, withIntermediateDirectories: true)
        try NamespaceSettings(maxSize: .bytes(2_000_000_000), maxAge: .never).save(to: cache.directory)
        let remembered = NamespaceSettings.load(from: cache.directory)
        #expect(remembered == NamespaceSettings(maxSize: .bytes(2_000_000_000), maxAge: .never))
        let limits = CacheLimits.resolve(maxSize: nil, maxAge: .seconds(60), remembered: remembered)
        #expect(limits.maxSize == .bytes(2_000_000_000) && limits.maxSizeSource == .remembered)
        #expect(limits.maxAge == .seconds(60) && limits.maxAgeSource == .commandLine)
        #expect(CacheLimits.resolve(maxSize: nil, maxAge: nil, remembered: NamespaceSettings()).maxAge == .seconds(604_800))
    }

    @Test func failedURLsExpireAndArePrunedAndCleared() throws {
        let store = FailedURLStore(namespaceDirectory: cache.directory)
        let old = CacheKey("http://example.test/old"), fresh = CacheKey("http://example.test/fresh")
        try store.record(old, url: old.string, reason: "HTTP 404", now: now - 90_000)
        try store.record(fresh, url: fresh.string, reason: "not an image", now: now - 10)
        #expect(store.lookup(fresh, ttl: FailedURLStore.defaultTTL, now: now)?.first?.reason == "not an image")
        #expect(store.lookup(old, ttl: FailedURLStore.defaultTTL, now: now)?.isEmpty == true)
        #expect(store.lookup(old, ttl: .never, now: now)?.first?.reason == "HTTP 404")
        #expect(try store.count(ttl: FailedURLStore.defaultTTL, now: now) == (2, 1))
        #expect(try store.prune(ttl: FailedURLStore.defaultTTL, now: now, dryRun: false) == 1)
        #expect(try store.clear() == 1)
        #expect(try store.count(ttl: .never, now: now) == (0, 0))
    }
}
