import Foundation

/// Base of the suites that fetch from nginx: each test gets its own server on a
/// free loopback port, its own HOME and an empty cache root, all removed after it.
class LoopbackCacheSuite {
    let server: NginxServer
    let home: TemporaryDirectory
    let cacheRoot: String

    init() throws {
        server = try NginxServer()
        home = try TemporaryDirectory()
        cacheRoot = home.appending("cache")
    }

    /// Runs `imgcache --cache-dir <cacheRoot> ARGUMENTS`.
    func fetch(_ arguments: [String], environment: [String: String] = [:]) throws -> RunResult {
        try ImgCacheProcess.run(["--cache-dir", cacheRoot] + arguments, environment: environment, home: home.path)
    }
}
