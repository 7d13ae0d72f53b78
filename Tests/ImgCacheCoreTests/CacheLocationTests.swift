import ImgCacheCore
import Testing

@Suite struct CacheLocationTests {
    func resolve(_ directory: String? = nil, _ namespace: String? = nil, _ environment: [String: String]) throws -> CacheLocation {
        try CacheLocation.resolve(cacheDirectory: directory, namespace: namespace, environment: environment, currentDirectory: "/cwd")
    }

    @Test func precedenceOfRootSources() throws {
        let all = ["IMGCACHE_DIR": "/env", "XDG_CACHE_HOME": "/xdg", "HOME": "/home/u"]
        #expect(try resolve("/opt", nil, all).root == "/opt")
        #expect(try resolve(nil, nil, all).root == "/env")
        #expect(try resolve(nil, nil, ["XDG_CACHE_HOME": "/xdg", "HOME": "/home/u"]).root == "/xdg/imgcache")
        #expect(try resolve(nil, nil, ["XDG_CACHE_HOME": "rel", "HOME": "/home/u"]).root == "/home/u/.cache/imgcache")
        #expect(try resolve(nil, nil, ["IMGCACHE_DIR": "", "HOME": "/home/u"]).root == "/home/u/.cache/imgcache")
        #expect(try resolve("rel/", nil, [:]).root == "/cwd/rel")
    }

    @Test func namespaceSources() throws {
        #expect(try resolve("/r", nil, [:]).directory == "/r/default")
        #expect(try resolve("/r", nil, ["IMGCACHE_NAMESPACE": "env"]).directory == "/r/env")
        #expect(try resolve("/r", "flag", ["IMGCACHE_NAMESPACE": "env"]).directory == "/r/flag")
    }

    @Test func failures() {
        #expect(throws: CacheLocation.ResolutionError.noHome) { try resolve(nil, nil, [:]) }
        #expect(throws: CacheLocation.ResolutionError.invalidNamespace(fromEnvironment: true, .invalidCharacter("/"))) {
            try resolve("/r", nil, ["IMGCACHE_NAMESPACE": "a/b"])
        }
    }
}
