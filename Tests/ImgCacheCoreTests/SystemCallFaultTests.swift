import Foundation
@testable import ImgCacheCore
import Testing

/// The disk failing under the cache, through `SystemCallFaults`: a full disk,
/// a folder without permission, an I/O error and interrupted calls, each
/// confined to this test's own cache folder. Whatever fails, the answer says
/// why and nothing already cached is lost or left half-written.
@Suite final class SystemCallFaultTests {
    let root: String
    let png = ScriptedScheduler.samplePNG
    var armed: [SystemCallFaults.Token] = []

    init() {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("imgcache-faults-\(UUID().uuidString)").path
    }

    deinit {
        for token in armed { SystemCallFaults.disarm(token) }
        try? FileManager.default.removeItem(atPath: root)
    }

    var cache: DiskCache { DiskCache(location: CacheLocation(root: root, namespace: .default)) }

    func arm(_ calls: Set<SystemCallFaults.Call>, _ errno: Errno, times: Int? = nil) -> SystemCallFaults.Token {
        let token = SystemCallFaults.arm(calls, under: root, errno: errno, times: times)
        armed.append(token)
        return token
    }

    func fetch(_ urls: [String]) -> [ScriptedScheduler.Answer] {
        let scheduler = ScriptedScheduler { [png] in ScriptedScheduler.served(png, from: $0.url.string) }
        return ScriptedScheduler.fetch(urls, cache: cache, with: scheduler)
    }

    /// Every file under the cache root, by path inside it.
    func files() -> [String] {
        (FileManager.default.enumerator(atPath: root)?.allObjects as? [String] ?? []).filter {
            var folder: ObjCBool = false
            return FileManager.default.fileExists(atPath: root + "/" + $0, isDirectory: &folder) && !folder.boolValue
        }.sorted()
    }

    @Test func aHitWhoseNameIsGoneWhenTouchedIsAMissNotADeadPath() throws {
        // A clean renames a victim aside before checking it was used: a lookup that
        // checked the entry but then finds its name gone must not answer with it.
        let stored = try #require(try fetch(["http://h/gone.png"]).first?.result.get())
        let key = CacheKey("http://h/gone.png")
        guard case .hit = cache.lookup(key, now: WallClock.now()) else { Issue.record("not a hit"); return }
        let vanished = arm([.setTime], .noSuchFile, times: 1)
        let result = cache.lookup(key, now: WallClock.now())
        SystemCallFaults.disarm(vanished)
        guard case .miss = result else { Issue.record("answered \(result) for \(stored.path)"); return }
        // A touch refused for another reason (a cache the user may only read) still answers.
        let readOnly = arm([.setTime], .readOnlyFileSystem, times: 1)
        guard case .hit = cache.lookup(key, now: WallClock.now()) else { Issue.record("a read-only touch lost the hit"); return }
        SystemCallFaults.disarm(readOnly)
    }

    @Test func aFullDiskFailsTheStoreLeavesNoTemporaryFileAndKeepsWhatWasCached() throws {
        let first = fetch(["http://h/kept.png"])
        let kept = try #require(try first.first?.result.get())
        let before = files()

        let full = arm([.write], .noSpace)
        let answers = fetch(["http://h/new.png"])
        SystemCallFaults.disarm(full)

        guard case .failure(.cacheUnwritable(let error))? = answers.first?.result else {
            Issue.record("expected a cache that cannot be written: \(answers)")
            return
        }
        #expect(error.errno == .noSpace)
        #expect(error.path?.hasPrefix(root) == true)
        #expect(answers.first.map { FetchError.message(of: $0.result) }??.contains("No space left on device") == true)
        // Nothing half-written stays behind, and what was cached is untouched.
        #expect(files().filter { $0.contains("tmp.") } == [])
        #expect(files().filter { $0.hasSuffix(".png") } == before.filter { $0.hasSuffix(".png") })
        #expect(try Data(contentsOf: URL(fileURLWithPath: kept.path)) == Data(png))
        #expect(cache.lookup(CacheKey("http://h/kept.png"), now: WallClock.now()).entry != nil)
        // A full disk is the machine's trouble, not the URL's: the next run fetches it.
        #expect(try fetch(["http://h/new.png"]).first?.result.get().cacheType == CacheType.downloaded)
    }

    @Test func aFolderWithoutPermissionIsReportedWithItsPathAndNothingIsCreated() throws {
        let denied = arm([.makeDirectory, .open], .permissionDenied)
        let answers = fetch(["http://h/a.png", "http://h/b.png"])
        #expect(SystemCallFaults.hits(denied) > 0)
        for answer in answers {
            guard case .failure(.cacheUnwritable(let error)) = answer.result else {
                Issue.record("expected a cache that cannot be written: \(answer)")
                continue
            }
            #expect(error.errno == .permissionDenied)
            #expect(error.description.contains(root))
            #expect(error.description.hasSuffix("Permission denied"))
        }
        #expect(files() == [])
    }

    @Test func anInputOutputErrorReadingAnEntryLeavesItInPlace() throws {
        let key = CacheKey("http://h/a.png")
        let stored = try #require(try fetch(["http://h/a.png"]).first?.result.get())

        // The shard folder is examined first: failing that says nothing of the entry itself.
        let failing = arm([.read, .attribute], .ioError)
        let lookup = cache.lookup(key, now: WallClock.now())
        SystemCallFaults.disarm(failing)

        guard case .unreadable(let path, let error) = lookup else {
            Issue.record("expected an entry that cannot be read: \(lookup)")
            return
        }
        #expect(path == stored.path)
        #expect(error.errno == .ioError)
        // It may well be whole: an I/O error is no proof of damage, so it is not removed.
        #expect(FileManager.default.fileExists(atPath: stored.path))
        #expect(cache.lookup(key, now: WallClock.now()).entry?.path == stored.path)
    }

    @Test func aFullDiskForTheMetadataAttributeFallsBackToASidecarFile() throws {
        let key = CacheKey("http://h/a.png")
        let full = arm([.attribute], .noSpace)
        let answers = fetch(["http://h/a.png"])
        #expect(SystemCallFaults.disarm(full) > 0)
        _ = try #require(try answers.first?.result.get())
        let entry = try #require(cache.lookup(key, now: WallClock.now()).entry)
        #expect(entry.placement == .sidecarFile)
        #expect(try Data(contentsOf: URL(fileURLWithPath: entry.path)) == Data(png))
    }

    @Test func anInputOutputErrorOnTheShardFolderIsNoMiss() throws {
        let key = CacheKey("http://h/a.png")
        _ = try #require(try fetch(["http://h/a.png"]).first?.result.get())
        let failing = arm([.status], .ioError)
        let lookup = cache.lookup(key, now: WallClock.now())
        SystemCallFaults.disarm(failing)
        guard case .unreadable(let path, _) = lookup else {
            Issue.record("expected a shard that cannot be read: \(lookup)")
            return
        }
        // The shard, or the file opened through the namespace folder (which needs no check of the shard).
        #expect(path == cache.shardDirectory(for: key) || path.hasPrefix(cache.shardDirectory(for: key) + "/"))
    }

    @Test func anInterruptedWaitForALockIsTakenUpAndTheLockIsHeld() throws {
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let interrupted = arm([.lock], .interrupted, times: 2)
        let lockFile = root + "/lock"
        let holder = try SystemCall.open(lockFile, O_RDWR | O_CREAT | O_CLOEXEC, 0o600).get()
        defer { SystemCall.close(holder) }
        #expect(throws: Never.self) { try SystemCall.lockByte(holder, 7, exclusive: true, wait: true).get() }
        #expect(SystemCallFaults.disarm(interrupted) == 2)
        // Held: another open of the file cannot take the byte.
        let other = try SystemCall.open(lockFile, O_RDWR | O_CLOEXEC).get()
        defer { SystemCall.close(other) }
        #expect(throws: Errno.wouldBlock) { try SystemCall.lockByte(other, 7, exclusive: true, wait: false).get() }
    }

    @Test func aFolderThatCannotBeListedStopsCleanBeforeItRemovesAnything() throws {
        let urls = (0..<3).map { "http://h/\($0).png" }
        let stored = try fetch(urls).map { try $0.result.get().path }
        // Every entry is past the age limit: a clean that could list would remove them all.
        let limits = CacheLimits(maxSize: .unlimited, maxAge: .seconds(60), maxSizeSource: .commandLine, maxAgeSource: .commandLine)
        let later = WallClock.now() + 3600

        let failing = arm([.list], .ioError)
        do {
            _ = try CacheCleaner(cache: cache).clean(limits: limits, now: later)
            Issue.record("a clean that cannot list the namespace went on")
        } catch {
            #expect(error.errno == .ioError)
            #expect(error.description.contains(root))
        }
        #expect(SystemCallFaults.disarm(failing) > 0)
        #expect(stored.allSatisfy { FileManager.default.fileExists(atPath: $0) })

        guard case .cleaned(let report) = try CacheCleaner(cache: cache).clean(limits: limits, now: later) else {
            Issue.record("another clean was running")
            return
        }
        #expect(report.expired.count == 3)
        #expect(stored.allSatisfy { !FileManager.default.fileExists(atPath: $0) })
    }

    @Test func interruptedCallsAreTakenUpAgain() throws {
        let writes = arm([.write], .interrupted, times: 3)
        let locks = arm([.lock], .interrupted, times: 2)
        let reads = arm([.read], .interrupted, times: 2)
        let stored = try #require(try fetch(["http://h/a.png"]).first?.result.get())
        let found = try #require(cache.lookup(CacheKey("http://h/a.png"), now: WallClock.now()).entry)
        #expect(found.path == stored.path)
        #expect(try Data(contentsOf: URL(fileURLWithPath: found.path)) == Data(png))
        #expect(SystemCallFaults.disarm(writes) == 3)
        #expect(SystemCallFaults.disarm(locks) == 2)
        #expect(SystemCallFaults.disarm(reads) == 2)
    }
}

extension FetchError {
    /// The message of a failed answer; nil for a success.
    static func message(of result: Result<FetchResult, FetchError>) -> String? {
        if case .failure(let error) = result { return error.message }
        return nil
    }
}
