import Foundation
import ImgCacheCore
import Testing

/// `-o` and `--output-dir` write through whatever is at the path, as curl
/// does: a FIFO, a device node, a symbolic link (and so /dev/stdout) are
/// written, never replaced; a plain file is replaced atomically with its
/// permission bits kept. Every special file is made in a temporary folder.
@Suite final class OutputTests: LoopbackCacheSuite {
    let work: TemporaryDirectory

    override init() throws {
        work = try TemporaryDirectory("imgcache-output")
        try super.init()
    }

    private var logo: Data { FileManager.default.contents(atPath: Paths.fixtures.appendingPathComponent("logo.png").path)! }

    private func fileType(_ path: String) -> mode_t {
        var info = stat()
        lstat(path, &info)
        return info.st_mode & S_IFMT
    }

    @Test func theCacheIsNeverWrittenThroughTheOutput() throws {
        let entry = try #require(try fetch(["fetch", server.url("logo.png")]).lines.first)
        // The entry's own path: it is there already, and stays an entry (the next fetch is a hit).
        let itself = try fetch(["fetch", "-o", entry, server.url("logo.png")])
        #expect(itself.status == 0, "\(itself.standardError)")
        #expect(try fetch(["--json", "fetch", server.url("logo.png")]).output.contains("\"cache\":\"disk\""))
        #expect(server.requestCount("logo.png") == 1)
        // Another image over it, directly, through a link, or into a shard with --output-dir: refused.
        let link = work.appending("entry-link.png")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: entry)
        for arguments in [["-o", entry], ["-o", link], ["--output-dir", (entry as NSString).deletingLastPathComponent],
                          ["-o", cacheRoot + "/default/settings"], ["--output-dir", cacheRoot + "/default/new/deeper"],
                          ["-o", cacheRoot + "/default/ab/new/x.png"]] {
            let other = try fetch(["fetch"] + arguments + [server.url("palette.png")])
            #expect(other.status == 74, "\(arguments): \(other.standardError)")
            #expect(other.standardError.contains("it is inside an imgcache namespace"), "\(other.standardError)")
        }
        #expect(FileManager.default.contents(atPath: entry) == logo)
        #expect(!FileManager.default.fileExists(atPath: cacheRoot + "/default/settings"))
        #expect(!FileManager.default.fileExists(atPath: cacheRoot + "/default/new"))
        // Standard output appended to an entry: refused as its name is.
        let appended = try ImgCacheProcess.runShell(
            "\"$IMGCACHE\" --cache-dir \"$ROOT\" fetch -o - \"$URL\" >> \"$ENTRY\"",
            environment: ["PATH": "/usr/bin:/bin", "IMGCACHE": Paths.binary, "ROOT": cacheRoot, "URL": server.url("palette.png"), "ENTRY": entry],
            home: home.path, workingDirectory: work.path)
        #expect(appended.status == 74, "\(appended.standardError)")
        #expect(FileManager.default.contents(atPath: entry) == logo)
    }

    @Test func aFIFOIsWrittenAndItsReaderReceivesEveryByte() throws {
        let fifo = work.appending("pipe")
        #expect(mkfifo(fifo, 0o600) == 0)
        let received = Locked(Data())
        // The reader opens the FIFO as a consumer would; the writer's open waits for it.
        let reader = Thread {
            let data = FileHandle(forReadingAtPath: fifo)?.readDataToEndOfFile() ?? Data()
            received.set(data)
        }
        reader.start()
        let result = try fetch(["fetch", "-o", fifo, server.url("logo.png")])
        #expect(result.status == 0, "\(result.standardError)")
        for _ in 0..<1000 where received.get().isEmpty { usleep(5_000) }
        #expect(received.get() == logo)
        #expect(fileType(fifo) == S_IFIFO)
    }

    @Test func aSymbolicLinkStaysAndItsTargetGetsTheImage() throws {
        let target = work.appending("target.png"), link = work.appending("link.png")
        try Data("old".utf8).write(to: URL(fileURLWithPath: target))
        #expect(symlink(target, link) == 0)
        let result = try fetch(["fetch", "-o", link, server.url("logo.png")])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(fileType(link) == S_IFLNK)
        #expect(FileManager.default.contents(atPath: target) == logo)

        // A link whose target does not exist yet: the target is made.
        let dangling = work.appending("dangling.png"), later = work.appending("later.png")
        #expect(symlink(later, dangling) == 0)
        #expect(try fetch(["fetch", "-o", dangling, server.url("logo.png")]).status == 0)
        #expect(fileType(dangling) == S_IFLNK)
        #expect(FileManager.default.contents(atPath: later) == logo)
    }

    @Test func aLinkToStandardOutputWritesToStandardOutput() throws {
        // What /dev/stdout is: a link to the process's descriptor 1.
        let link = work.appending("stdout")
        #expect(symlink("/proc/self/fd/1", link) == 0)
        let result = try fetch(["fetch", "-o", link, server.url("logo.png")])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput == logo)
        #expect(fileType(link) == S_IFLNK)
    }

    @Test func aDeviceNodeIsWrittenNotReplaced() throws {
        // Made only where the test may (as root); the null device's numbers (1, 3).
        let node = work.appending("null")
        guard mknod(node, S_IFCHR | 0o666, dev_t(1 << 8 | 3)) == 0 else { return }
        let result = try fetch(["fetch", "-o", node, server.url("logo.png")])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(fileType(node) == S_IFCHR)
    }

    @Test func aPlainFileIsReplacedWithItsPermissionsKept() throws {
        let path = work.appending("kept.png")
        try Data("old".utf8).write(to: URL(fileURLWithPath: path))
        #expect(chmod(path, 0o640) == 0)
        #expect(try fetch(["fetch", "-o", path, server.url("logo.png")]).status == 0)
        var info = stat()
        lstat(path, &info)
        #expect(info.st_mode & 0o7777 == 0o640)
        #expect(FileManager.default.contents(atPath: path) == logo)
        #expect(try FileManager.default.contentsOfDirectory(atPath: work.path) == ["kept.png"])
    }

    @Test func aNewFileTakesThePermissionsTheUmaskAllows() throws {
        let path = work.appending("new.png")
        let result = try ImgCacheProcess.runShell("umask 027; \"$BIN\" --cache-dir \"$CACHE\" fetch -o \"$OUT\" \"$URL\"",
                                                  environment: ["BIN": Paths.binary, "CACHE": cacheRoot, "OUT": path,
                                                                "URL": server.url("logo.png")],
                                                  home: home.path, workingDirectory: work.path)
        #expect(result.status == 0, "\(result.standardError)")
        var info = stat()
        lstat(path, &info)
        #expect(info.st_mode & 0o777 == 0o640)
    }

    @Test func aFIFOWithoutAReaderDoesNotHoldOffASignal() throws {
        let fifo = work.appending("nobody-reads")
        #expect(mkfifo(fifo, 0o600) == 0)
        let outputs = try TemporaryDirectory("imgcache-fifo")
        // A miss: the run watches for signals while it downloads, then waits for a reader that never comes.
        let process = try ImgCacheProcess.startCapturing(["--cache-dir", cacheRoot, "fetch", "-o", fifo, server.url("logo.png")],
                                                         home: home.path, outputs: outputs)
        for _ in 0..<1000 where CacheInspection.storedFiles(under: cacheRoot + "/default").filter({ $0.hasSuffix(".png") }).isEmpty {
            usleep(5_000)
        }
        usleep(50_000)
        kill(process.processIdentifier, SIGTERM)
        let result = try ImgCacheProcess.result(of: process, outputs: outputs, limit: 8)
        #expect(result.status == 143, "\(result.standardError)")
        #expect(!result.standardError.contains("stopped at once"), "\(result.standardError)")
        #expect(fileType(fifo) == S_IFIFO)
    }

    @Test func anOutputFolderThatIsALinkToAFolderIsWrittenThrough() throws {
        let real = work.appending("real"), link = work.appending("link")
        try FileManager.default.createDirectory(atPath: real, withIntermediateDirectories: false)
        #expect(symlink(real, link) == 0)
        let result = try fetch(["fetch", "--output-dir", link, "--name", "{stem}.{ext}", server.url("logo.png")])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(FileManager.default.contents(atPath: real + "/logo.png") == logo)
        #expect(fileType(link) == S_IFLNK)
    }

    @Test func aReplacedFileKeepsItsOwnerWhereThatCanBeKept() throws {
        guard getuid() == 0 else { return }
        let path = work.appending("theirs.png")
        try Data("old".utf8).write(to: URL(fileURLWithPath: path))
        #expect(chown(path, 65534, 65534) == 0)
        #expect(try fetch(["fetch", "-o", path, server.url("logo.png")]).status == 0)
        var info = stat()
        lstat(path, &info)
        #expect(info.st_uid == 65534 && info.st_gid == 65534)
        #expect(FileManager.default.contents(atPath: path) == logo)
    }

    @Test func aFolderIsRefusedAndLeftAsItIs() throws {
        let folder = work.appending("folder")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        let result = try fetch(["fetch", "-o", folder, server.url("logo.png")])
        #expect(result.status == 74, "\(result.standardError)")
        #expect(result.standardError.contains("Is a directory"))
        #expect(fileType(folder) == S_IFDIR)
    }

    @Test func outputDirectoryNamesCarryTheExtensionOfTheBytes() throws {
        // Served under names that say nothing, or the wrong thing, of the bytes.
        let served = try TemporaryDirectory("imgcache-served")
        try logo.write(to: URL(fileURLWithPath: served.appending("avatar")))
        try logo.write(to: URL(fileURLWithPath: served.appending("wrong.jpg")))
        try logo.write(to: URL(fileURLWithPath: served.appending("right.png")))
        let nginx = try NginxServer(serving: served.url)
        let folder = work.appending("out")
        let result = try fetch(["fetch", "--output-dir", folder, "--name", "{stem}.{ext}", nginx.url("avatar?size=2"), nginx.url("wrong.jpg"),
                                nginx.url("right.png")])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).sorted() == ["avatar.png", "right.png", "wrong.png"])
    }

    @Test func outputDirectoryCopiesNeverReplaceEachOtherAndAnUnchangedCopyIsLeftAlone() throws {
        let served = try TemporaryDirectory("imgcache-served")
        for folder in ["a", "b"] {
            try FileManager.default.createDirectory(atPath: served.appending(folder), withIntermediateDirectories: false)
        }
        let palette = try Data(contentsOf: Paths.fixtures.appendingPathComponent("palette.png"))
        try logo.write(to: URL(fileURLWithPath: served.appending("a/logo.png")))
        try palette.write(to: URL(fileURLWithPath: served.appending("b/logo.png")))
        try logo.write(to: URL(fileURLWithPath: served.appending("my photo.png")))
        let nginx = try NginxServer(serving: served.url)
        let folder = work.appending("site")
        let urls = [nginx.url("a/logo.png"), nginx.url("b/logo.png"), nginx.url("my%20photo.png")]
        let first = try fetch(["--json", "fetch", "--output-dir", folder] + urls)
        #expect(first.status == 0, "\(first.standardError)")
        // The default names hold the bytes' hash: two images ending in one file name stay apart, and
        // one image at two URLs is one copy.
        func hash8(_ data: Data) throws -> String { String(try SHA256.hex([UInt8](data)).prefix(8)) }
        let logoName = "logo-64.\(try hash8(logo)).png", paletteName = "logo-30.\(try hash8(palette)).png"
        let photoName = "my photo-64.\(try hash8(logo)).png"
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).sorted() == [logoName, paletteName, photoName].sorted())
        #expect(FileManager.default.contents(atPath: folder + "/" + logoName) == logo)
        #expect(FileManager.default.contents(atPath: folder + "/" + paletteName) == palette)
        // Each JSON line names the copies it made.
        let copies = try first.lines.map { line in
            try #require((try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["copies"] as? [String])
        }
        #expect(copies == [[folder + "/" + logoName], [folder + "/" + paletteName], [folder + "/" + photoName]])
        // A rebuild from the warm cache rewrites nothing: same inode, same time.
        var before = stat(), after = stat()
        #expect(utimensat(AT_FDCWD, folder + "/" + logoName, [timespec(tv_sec: 1_000_000_000, tv_nsec: 0),
                                                              timespec(tv_sec: 1_000_000_000, tv_nsec: 0)], 0) == 0)
        lstat(folder + "/" + logoName, &before)
        #expect(try fetch(["fetch", "--output-dir", folder] + urls).status == 0)
        lstat(folder + "/" + logoName, &after)
        #expect(after.st_ino == before.st_ino && after.st_mtim.tv_sec == 1_000_000_000)
        // A copy whose bytes differ is replaced.
        try Data("old".utf8).write(to: URL(fileURLWithPath: folder + "/" + photoName))
        #expect(try fetch(["fetch", "--output-dir", folder, urls[2]]).status == 0)
        #expect(FileManager.default.contents(atPath: folder + "/" + photoName) == logo)
        // Names without the hash: two images under one name are an error naming both URLs (exit 74);
        // the first copy stays, the second is not written.
        let plain = work.appending("plain")
        let clash = try fetch(["fetch", "--output-dir", plain, "--name", "{stem}.{ext}"] + urls)
        #expect(clash.status == 74, "\(clash.standardError)")
        #expect(clash.standardError.contains(nginx.url("b/logo.png")) && clash.standardError.contains(nginx.url("a/logo.png")
            + "'s copy, another image; put {hash8} in --name"), "\(clash.standardError)")
        #expect(clash.lines.count == 3, "every URL keeps its line: \(clash.output)")
        #expect(FileManager.default.contents(atPath: plain + "/logo.png") == logo)
        #expect(FileManager.default.contents(atPath: plain + "/my photo.png") == logo)
    }

    @Test func outputDirectoryNamesAThumbnailForItsSizeAndAConversionForItsFormat() throws {
        let folder = work.appending("sized")
        let sized = ["--name", "{stem}-{width}x{height}.{ext}"]
        let result = try fetch(["fetch", "--output-dir", folder, "--thumbnail", "32x,16x", "--format", "webp,png", server.url("logo.png")] + sized)
        #expect(result.status == 0, "\(result.standardError)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).sorted()
                == ["logo-16x12.png", "logo-16x12.webp", "logo-32x24.png", "logo-32x24.webp"])
        let one = work.appending("one")
        #expect(try fetch(["fetch", "--output-dir", one, "--thumbnail", "32x", server.url("logo.png")] + sized).status == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: one) == ["logo-32x24.png"])
        // A name no file system takes: the cached file's name instead.
        let long = work.appending("long")
        let served = try TemporaryDirectory("imgcache-long")
        let name = String(repeating: "a", count: 240) + ".png"
        try logo.write(to: URL(fileURLWithPath: served.appending(name)))
        let nginx = try NginxServer(serving: served.url)
        let longResult = try fetch(["fetch", "--output-dir", long, "--thumbnail", "32x,16x", nginx.url(name)] + sized)
        #expect(longResult.status == 0, "\(longResult.standardError)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: long).allSatisfy { $0.utf8.count < 100 && $0.hasSuffix(".png") })
        // Two sizes that come out the same (the image is smaller than both): one copy, written once.
        let same = work.appending("same")
        let twice = try fetch(["--json", "fetch", "--output-dir", same, "--thumbnail", "640x,1280x", server.url("logo.png")] + sized)
        #expect(try FileManager.default.contentsOfDirectory(atPath: same) == ["logo-64x48.png"])
        let copies = try #require((try twice.jsonLines().first)?["copies"] as? [String])
        #expect(copies == [same + "/logo-64x48.png", same + "/logo-64x48.png"])
        let converted = work.appending("converted")
        #expect(try fetch(["fetch", "--output-dir", converted, "--format", "webp", "--name", "{stem}.{ext}", server.url("logo.png")]).status == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: converted) == ["logo.webp"])
    }
}

/// A value shared with a thread, behind a lock.
final class Locked<Value>: @unchecked Sendable {
    // Safe: every access to `value` holds `lock`.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func get() -> Value { lock.withLock { value } }
    func set(_ newValue: Value) { lock.withLock { value = newValue } }
}
