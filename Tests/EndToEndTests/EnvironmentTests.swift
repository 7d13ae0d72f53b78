import Foundation
import Testing

/// Where the cache goes, decided by options and the environment, as a user sees it.
@Suite final class EnvironmentTests {
    let server: NginxServer
    let home: TemporaryDirectory

    init() throws {
        server = try NginxServer()
        home = try TemporaryDirectory()
    }

    func cachedPath(_ arguments: [String], environment: [String: String], workingDirectory: String? = nil) throws -> String {
        let result = try ImgCacheProcess.run(arguments + ["fetch", server.url("logo.png")], environment: environment,
                                             home: home.path, workingDirectory: workingDirectory)
        #expect(result.status == 0, "\(result.standardError)")
        return result.lines.first ?? ""
    }

    @Test func theDefaultIsTheHomeCacheFolder() throws {
        #expect(try cachedPath([], environment: [:]).hasPrefix(home.path + "/.cache/imgcache/default/"))
    }

    @Test func xdgCacheHomeIsUsedWhenAbsolute() throws {
        let xdg = home.appending("xdg")
        #expect(try cachedPath([], environment: ["XDG_CACHE_HOME": xdg]).hasPrefix(xdg + "/imgcache/default/"))
        #expect(try cachedPath([], environment: ["XDG_CACHE_HOME": "relative"]).hasPrefix(home.path + "/.cache/imgcache/"))
    }

    @Test func imgcacheDirBeatsXDGAndTheOptionBeatsBoth() throws {
        let environment = ["XDG_CACHE_HOME": home.appending("xdg"), "IMGCACHE_DIR": home.appending("env")]
        #expect(try cachedPath([], environment: environment).hasPrefix(home.appending("env") + "/default/"))
        #expect(try cachedPath(["--cache-dir", home.appending("opt")], environment: environment)
            .hasPrefix(home.appending("opt") + "/default/"))
    }

    @Test func theNamespaceComesFromTheOptionThenTheEnvironment() throws {
        let environment = ["IMGCACHE_DIR": home.appending("c"), "IMGCACHE_NAMESPACE": "fromenv"]
        #expect(try cachedPath([], environment: environment).hasPrefix(home.appending("c") + "/fromenv/"))
        #expect(try cachedPath(["-n", "fromflag"], environment: environment).hasPrefix(home.appending("c") + "/fromflag/"))
    }

    @Test func aRelativeCacheDirIsTakenFromTheWorkingDirectory() throws {
        let path = try cachedPath(["--cache-dir", "rel"], environment: [:], workingDirectory: home.path)
        #expect(path.hasPrefix(home.path + "/rel/default/"), "\(path)")
    }

    @Test func globalOptionsWorkAfterTheCommandToo() throws {
        let result = try ImgCacheProcess.run(["fetch", server.url("logo.png"), "--json", "--cache-dir", home.appending("after")],
                                             home: home.path)
        #expect(try result.jsonLines().first?["path"] as? String != nil)
        #expect(FileManager.default.fileExists(atPath: home.appending("after/default")))
    }
}
