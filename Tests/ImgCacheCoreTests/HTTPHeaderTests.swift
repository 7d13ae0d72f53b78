@testable import ImgCacheCore
import Testing

@Suite struct HTTPHeaderTests {
    @Test func parsesNameAndTrimmedValue() throws {
        #expect(try HTTPHeader(parsing: "X-Trace:  a b  ") == HTTPHeader(name: "X-Trace", value: "a b"))
        #expect(try HTTPHeader(parsing: "Accept:").removes)
    }

    @Test(arguments: ["NoColon", ": empty-name", "Bad Name: x", "X: a\r\nInjected: 1", "X: a\nb", "X: a\u{0}b", "Ümlaut: x"])
    func refusesUnsafeLines(line: String) {
        #expect(throws: ValueError.self) { try HTTPHeader(parsing: line) }
    }

    @Test func userHeadersReplaceOrRemoveTheDefaults() throws {
        var request = DownloadRequest(url: try RemoteURL(parsing: "http://h/a.png"), bodyDirectory: "/tmp")
        #expect(request.headerLines == ["Accept: image/avif,image/jxl,image/webp,image/jpeg,image/png,image/gif,image/heic,image/heif,image/tiff,image/bmp,image/x-icon,image/svg+xml,image/*;q=0.8,*/*;q=0.5", "User-Agent: imgcache/\(ImgCache.version)"])
        request.headers = [HTTPHeader(name: "user-agent", value: "bot/1"), HTTPHeader(name: "Accept", value: "")]
        request.validators = Validators(etag: "\"v1\"", lastModified: "Sat, 21 Nov 2026 05:23:02 GMT")
        #expect(request.headerLines == ["user-agent: bot/1", "Accept:", "If-None-Match: \"v1\"",
                                        "If-Modified-Since: Sat, 21 Nov 2026 05:23:02 GMT"])
    }

    @Test func credentialsSplitAtTheFirstColonAndNeverDescribeThePassword() {
        let credentials = Credentials(parsing: "me:p:w")
        #expect(credentials == Credentials(user: "me", password: "p:w"))
        #expect(credentials?.description == "me:***")
        #expect(Credentials(parsing: "nocolon") == nil)
        #expect(Credentials(parsing: ":pw") == nil)
    }
}
