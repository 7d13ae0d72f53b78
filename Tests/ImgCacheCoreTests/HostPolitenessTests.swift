@testable import ImgCacheCore
import Testing

/// Which server a download counts against, for the per-host limits.
@Suite struct HostPolitenessTests {
    @Test(arguments: [
        ("http://Example.COM/x.png", "example.com"), ("http://example.com:8080/x", "example.com:8080"),
        ("https://user:pass@h:81/x", "h:81"), ("https://a:b@h/x", "h"), ("http://h/x?port=:99", "h"),
        ("http://h/x#:77", "h"), ("http://[::1]:81/x", "[::1]:81"), ("http://[::1]/x", "[::1]"), ("http://h:/x", "h"),
    ])
    func aServerIsItsHostAndTheExplicitPort(url: String, expected: String) throws {
        let request = DownloadRequest(url: try RemoteURL(parsing: url), bodyDirectory: "/nonexistent")
        #expect(HostPoliteness.host(of: request) == expected)
    }
}
