import Foundation
@testable import ImgCacheCore
import Testing

/// How remote stores are written down, and the objects they keep.
@Suite struct RemoteSpecTests {
    @Test func eachKindOfStoreIsReadWithItsAttributes() throws {
        let http = try RemoteSpec(parsing: "https://cache.lan/images/|read-only|timeout=2s|connect-timeout=500ms|bearer-env=TOKEN")
        #expect(http.kind == .http(base: "https://cache.lan/images"))
        #expect(http.readOnly && http.timeout == 2 && http.connectTimeout == 0.5 && http.bearerEnvironment == "TOKEN")
        let kept = try RemoteSpec(parsing: "s3://bucket/p?endpoint=http://h&region=r|keep-if-slow")
        #expect(!http.keepIfSlow && kept.keepIfSlow)
        let redis = try RemoteSpec(parsing: "redis://fleet:pw@10.0.0.5:6380/3|ttl=7d")
        #expect(redis.kind == .redis(host: "10.0.0.5", port: 6380, database: 3, user: "fleet", password: "pw"))
        #expect(redis.timeToLive == 7 * 86_400)
        #expect(try RemoteSpec(parsing: "redis://localhost").kind == .redis(host: "localhost", port: 6379, database: 0, user: nil, password: nil))
        #expect(try RemoteSpec(parsing: "redis+unix:/run/redis.sock?db=2").kind == .redisSocket(path: "/run/redis.sock", database: 2))
        let s3 = try RemoteSpec(parsing: "s3://my-bucket/img?endpoint=http://127.0.0.1:9000&region=eu-west-1")
        #expect(s3.kind == .s3(bucket: "my-bucket", prefix: "img", endpoint: "http://127.0.0.1:9000", region: "eu-west-1"))
    }

    @Test func badStoresAreRefusedWithTheReason() {
        func reason(_ text: String) -> String {
            do { _ = try RemoteSpec(parsing: text); return "" } catch { return error.description }
        }
        #expect(reason("rediss://host").contains("TLS"))
        #expect(reason("ftp://host/x").contains("no URL") || reason("ftp://host/x").contains("expected"))
        #expect(reason("redis://host:99999").contains("port"))
        #expect(reason("redis://host/db").contains("database"))
        #expect(reason("http://h/x|timeout=soon").contains("timeout"))
        #expect(reason("http://h/x|colour=blue").contains("unknown attribute"))
        #expect(reason("http://h/x|read-only=yes").contains("no value"))
        #expect(reason("http://h/x|keep-if-slow=1").contains("keep-if-slow takes no value"))
        #expect(reason("").contains("empty"))
        #expect(reason("http://h/a b").contains("space"))
        #expect(reason("redis://h|ttl=99999999999999999999w").contains("10 years"))
        #expect(reason("redis://h|timeout=0.0001s").contains("1ms"))
        // A password never shows in a reason, whatever is wrong with the URL.
        #expect(reason("redis://fleet:hunter2@h:99999") == "bad port in 'redis://***@h:99999'")
        #expect(!reason("redis://:hunter2@h/x").contains("hunter2"))
    }

    @Test func passwordsAreNeverShown() throws {
        let spec = try RemoteSpec(parsing: "redis://fleet:hunter2@host:6379|ttl=1d")
        #expect(spec.description == "redis://***@host:6379|ttl=1d" && spec.identity == "redis://***@host:6379")
        #expect(spec.hasCredentialsInURL)
        #expect(!(try RemoteSpec(parsing: "redis://host|password-env=P")).hasCredentialsInURL)
    }

    @Test func theEnvironmentListsStoresSeparatedBySpaces() throws {
        #expect(try RemoteSpec.list(parsing: " http://a/x   redis://b ").map(\.identity) == ["http://a/x", "redis://b"])
        #expect(try RemoteSpec.list(parsing: "none").isEmpty && (try RemoteSpec.list(parsing: "")).isEmpty)
        #expect(throws: ValueError.self) { try RemoteSpec.list(parsing: "none http://a/x") }
    }
}
