import Foundation
import Testing

/// Things planted in the cache where entries go.
@Suite final class PlantedFileTests: LoopbackCacheSuite {
    @Test func aFIFOInAnEntrysPlaceIsRemovedNotRead() throws {
        let url = server.url("logo.png")
        let path = try #require(try fetch(["fetch", url]).lines.first)
        try FileManager.default.removeItem(atPath: path)
        #expect(mkfifo(path, 0o644) == 0)
        // Reading a FIFO would block for ever; the lookup sees a damaged entry and fetches again.
        let again = try fetch(["-v", "fetch", url])
        #expect(again.status == 0, "\(again.standardError)")
        #expect(again.standardError.contains("damaged entry"), "\(again.standardError)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Paths.fixture("logo.png"))
        #expect(server.requestCount("logo.png") == 2)
    }

    /// A shard's URL log replaced by a link (to a file someone else owns) or by a sparse file of
    /// gigabytes: read as no log, and removed by clean (the link, not its target), which goes on.
    @Test func aPlantedURLLogNeitherStopsCleanNorIsRead() throws {
        let url = server.url("logo.png")
        let path = try #require(try fetch(["fetch", url]).lines.first)
        let shard = (path as NSString).deletingLastPathComponent
        let target = cacheRoot + "/../planted-target-\(getpid())"
        try Data("keep\n".utf8).write(to: URL(fileURLWithPath: target))
        defer { try? FileManager.default.removeItem(atPath: target) }
        try FileManager.default.removeItem(atPath: shard + "/urls")
        #expect(symlink(target, shard + "/urls") == 0)
        #expect(try fetch(["list"]).status == 0)
        let cleaned = try fetch(["clean", "--max-size", "1k"])
        #expect(cleaned.status == 0, "\(cleaned.standardError)")
        #expect(!FileManager.default.fileExists(atPath: path), "the entry over the size went")
        var info = stat()
        #expect(lstat(shard + "/urls", &info) != 0 || info.st_mode & S_IFMT == S_IFREG, "the link is gone")
        #expect(FileManager.default.contents(atPath: target) == Data("keep\n".utf8))

        // Eight sparse gigabytes: not read by list (nothing of it shows), removed by clean.
        let again = try #require(try fetch(["fetch", url]).lines.first)
        let log = (again as NSString).deletingLastPathComponent + "/urls"
        #expect(truncate(log, 8 << 30) == 0)
        let listed = try fetch(["list"])
        #expect(listed.status == 0 && listed.output.contains(url) == false, "\(listed.output)")
        #expect(try fetch(["clean", "--max-age", "1d"]).status == 0)
        #expect(lstat(log, &info) != 0 || info.st_size < 1 << 20)
    }

    @Test func aFIFOInTheLockFilesPlaceIsRefusedNotUsed() throws {
        #expect(try fetch(["fetch", server.url("logo.png")]).status == 0)
        let lock = cacheRoot + "/default/lock"
        try FileManager.default.removeItem(atPath: lock)
        #expect(mkfifo(lock, 0o644) == 0)
        // A store needs the lock: refused, said, nothing stored; a hit needs none.
        let store = try fetch(["fetch", server.url("photo.jpg")])
        #expect(store.status == 73, "\(store.standardError)")
        #expect(store.standardError.contains("lock: it is not a regular file"), "\(store.standardError)")
        #expect(try fetch(["fetch", server.url("logo.png")]).status == 0)
        // clear takes each shard's lock to empty it: refused the same way, said once, nothing removed.
        let cleared = try fetch(["clear"])
        #expect(cleared.status == 73 && cleared.standardError.contains("lock: it is not a regular file"), "\(cleared.standardError)")
        #expect(cleared.standardError.split(separator: "\n").count == 1, "\(cleared.standardError)")
        let removed = try fetch(["remove", server.url("logo.png")])
        #expect(removed.status == 73 && removed.standardError.contains("lock: it is not a regular file"), "\(removed.standardError)")
        #expect(try fetch(["--json", "fetch", server.url("logo.png")]).output.contains("\"cache\":\"disk\""))
        var info = stat()
        #expect(lstat(lock, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO)
    }

    @Test func aSymbolicLinkInTheLockFilesPlaceIsNamedSo() throws {
        #expect(try fetch(["fetch", server.url("logo.png")]).status == 0)
        let lock = cacheRoot + "/default/lock"
        try FileManager.default.removeItem(atPath: lock)
        try FileManager.default.createSymbolicLink(atPath: lock, withDestinationPath: home.appending("elsewhere"))
        let store = try fetch(["fetch", server.url("photo.jpg")])
        #expect(store.status == 73 && store.standardError.contains("lock: it is a symbolic link; imgcache does not follow links inside the cache"),
                "\(store.standardError)")
        #expect(!FileManager.default.fileExists(atPath: home.appending("elsewhere")))
    }
}
