import Foundation
import Testing

/// The remote tier against real stores on 127.0.0.1: nginx's WebDAV module,
/// Debian's redis-server (TCP, unix socket, requirepass, maxmemory) and moto's
/// S3 server with signatures checked. Each "machine" is a cache root of its
/// own; the origin is nginx, whose access log counts what reached it.
@Suite final class RemoteStoreTests: FaultServerSuite {
    let work: TemporaryDirectory
    static let images = ["photo.jpg", "logo.png", "anim.gif", "alpha.webp", "palette.png", "gray.jpg", "lossless.webp",
                         "progressive.jpg", "sticker.webp", "moving.webp", "apng.png", "clear.gif"]

    override init() throws {
        work = try TemporaryDirectory("imgcache-remote")
        try super.init()
    }

    var urls: [String] { RemoteStoreTests.images.map { server.url($0) } }

    /// The list of every image, as a file.
    func list() throws -> String { try work.write(lines: urls) }

    /// Runs imgcache on the cache root of machine `name`.
    func on(_ name: String, _ arguments: [String], environment: [String: String] = [:]) throws -> RunResult {
        try ImgCacheProcess.run(["--cache-dir", work.appending(name)] + arguments, environment: environment, home: home.path)
    }

    func summary(_ result: RunResult) throws -> [String: Any] {
        try #require(try result.jsonLines().last { $0["summary"] as? Bool == true })
    }

    func count(_ summary: [String: Any], _ field: String) -> Int { summary[field] as? Int ?? -1 }

    /// A field of a prefetch's JSON summary line; -1 when there is none.
    func count(_ result: RunResult, _ field: String) -> Int {
        let summary = (try? result.jsonLines())?.last { $0["summary"] as? Bool == true }
        return summary?[field] as? Int ?? -1
    }

    /// Requests for images that reached the origin (not the store's).
    var originRequests: Int { server.requests.filter { !$0.uri.contains("store/") }.count }

    /// Each stored file of machine `name`'s default namespace, by relative path.
    func entries(_ name: String) -> [String: Data] {
        let root = work.appending(name) + "/default"
        var found: [String: Data] = [:]
        for relative in CacheInspection.storedFiles(under: root) {
            found[relative] = FileManager.default.contents(atPath: root + "/" + relative)
        }
        return found
    }

    /// Entries whose bytes, metadata or size are not the origin's.
    func problems(_ name: String) -> [String] {
        CacheInspection.problems(inNamespace: work.appending(name) + "/default") { key in
            (try? Paths.fixture(String(key.split(separator: "/").last ?? "")))
        }
    }

    /// Standard error lines that speak of a remote store.
    func remoteMessages(_ result: RunResult) -> [String] { result.errorLines.filter { $0.contains("remote") } }

    /// Whether the run said one thing of its stores, and it holds every one of `words`.
    func saidOnce(_ result: RunResult, _ words: String...) -> Bool {
        let said = remoteMessages(result)
        return said.count == 1 && words.allSatisfy { said[0].contains($0) }
    }

    // MARK: Sharing

    @Test func aSecondMachineGetsEveryImageFromAWebDAVStoreAndNothingFromTheOrigin() throws {
        let remote = server.url("store")
        let first = try on("a", ["--json", "prefetch", "--remote", remote, try list()])
        #expect(first.status == 0, "\(first.standardError)")
        let warmed = try summary(first)
        #expect(count(warmed, "downloaded") == 12 && count(warmed, "remote") == 0)
        #expect(count(warmed, "remote_writes") == 12 && count(warmed, "remote_errors") == 0)
        #expect(originRequests == 12)
        let objects = CacheInspection.files(under: server.storeDirectory)
        #expect(objects.count == 12)
        #expect(objects.allSatisfy { $0.hasPrefix("v1/default/") && $0.split(separator: "/").count == 4 })

        let second = try on("b", ["--json", "prefetch", "--remote", remote, try list()])
        #expect(second.status == 0, "\(second.standardError)")
        let shared = try summary(second)
        #expect(count(shared, "remote") == 12 && count(shared, "downloaded") == 0 && count(shared, "remote_writes") == 0)
        #expect(try second.jsonLines().filter { $0["summary"] == nil }.allSatisfy { $0["cache"] as? String == "remote" })
        #expect(originRequests == 12, "the second machine asked the origin")
        let a = entries("a"), b = entries("b")
        #expect(a.count == 12 && Set(a.keys) == Set(b.keys))
        #expect(a == b, "the entries differ between the machines")
        #expect(problems("b").isEmpty, "\(problems("b"))")

        // A hit on the second machine is now local: the store is not asked again.
        let storeRequests = server.requests.count
        let again = try on("b", ["fetch", "--remote", remote, urls[0]])
        #expect(again.status == 0 && server.requests.count == storeRequests)
    }

    @Test func machinesShareThroughRedisOverItsSocketAndTCPWithAPassword() throws {
        let redis = try RedisServer(password: "redis-secret")
        let secret = ["REDIS_PASSWORD": "redis-secret"]
        // Machine a remembers the store (no password in it: it comes from the environment).
        let first = try on("a", ["--json", "prefetch", "--remote", "redis+unix:\(redis.socketPath)|password-env=REDIS_PASSWORD",
                                 "--remember", try list()], environment: secret)
        #expect(first.status == 0, "\(first.standardError)")
        #expect(count(first, "remote_writes") == 12)
        let keys = try redis.keys()
        #expect(keys.count == 12 && keys.allSatisfy { $0.hasPrefix("imgcache:v1:default:") })
        let ttl = Int(try redis.command(["ttl", keys[0]])) ?? 0
        #expect(ttl > 29 * 86_400, "keys expire after ttl= (30 days by default)")
        let settings = try String(contentsOfFile: work.appending("a/default/settings"), encoding: .utf8)
        #expect(settings.contains("redis+unix:") && !settings.contains("redis-secret"))

        // Machine b names it through IMGCACHE_REMOTE, over TCP.
        let second = try on("b", ["--json", "prefetch", try list()],
                            environment: secret.merging(["IMGCACHE_REMOTE": "\(redis.url)|password-env=REDIS_PASSWORD"]) { $1 })
        #expect(second.status == 0, "\(second.standardError)")
        #expect(count(second, "remote") == 12)
        #expect(originRequests == 12)
        #expect(entries("a") == entries("b") && problems("b").isEmpty)

        // The remembered store is used by a later run of machine a without flags.
        let info = try on("a", ["--json", "cache-info"])
        let object = try #require(try info.jsonLines().first)
        #expect(object["remotes_source"] as? String == "remembered")
        #expect((object["remotes"] as? String)?.hasPrefix("redis+unix:") == true)
        #expect(!info.output.contains("redis-secret"))
    }

    @Test func machinesShareThroughS3WithSignedRequestsAndWrongKeysCostNothing() throws {
        let s3 = try S3Server()
        // moto is Python: while the other tests load both cores, its lookups can take longer than
        // nginx's downloads, and the store would be judged slow. Sharing is tested here, not that rule.
        let remote = s3.remote() + "|keep-if-slow"
        let first = try on("a", ["--json", "prefetch", "--remote", remote, try list()], environment: s3.credentials)
        #expect(first.status == 0, "\(first.standardError)")
        #expect(count(first, "remote_writes") == 12, "\(first.standardError)")
        let objects = try s3.objects()
        #expect(objects.count == 12 && objects.keys.allSatisfy { $0.hasPrefix("images/v1/default/") })
        #expect(objects.values.allSatisfy { $0.starts(with: Data("imgcache-object 1\n".utf8)) })

        let second = try on("b", ["--json", "prefetch", "--remote", remote, try list()], environment: s3.credentials)
        #expect(count(second, "remote") == 12, "\(second.standardError)")
        #expect(originRequests == 12 && entries("a") == entries("b"))

        // A wrong secret: every image from the origin, the store's refusal said once.
        var wrong = s3.credentials
        wrong["AWS_SECRET_ACCESS_KEY"] = "not-the-secret"
        let third = try on("c", ["--json", "prefetch", "--remote", remote, try list()], environment: wrong)
        #expect(third.status == 0)
        #expect(count(third, "downloaded") == 12 && count(third, "remote_errors") >= 1)
        #expect(saidOnce(third, "403", "credentials"), "\(third.standardError)")
        #expect(!third.standardError.contains("not-the-secret") && problems("c").isEmpty)
    }

    @Test func originalsAreSharedAndTheirVariantsMadeLocally() throws {
        let remote = server.url("store")
        let arguments = ["--json", "prefetch", "--thumbnail", "16x16", "--remote", remote, try list()]
        #expect(try on("a", arguments).status == 0)
        let second = try on("b", arguments)
        #expect(count(second, "remote") == 12, "\(second.standardError)")
        #expect(originRequests == 12 && entries("a") == entries("b"))
        // The store holds the images as served: a plain prefetch takes them from it too.
        let full = try on("c", ["--json", "prefetch", "--remote", remote, try list()])
        #expect(count(full, "remote") == 12 && count(full, "downloaded") == 0 && originRequests == 12)
    }

    @Test func localHitsAreWrittenOnlyWithRemoteReshareAndReadOnlyStoresAreNeverWritten() throws {
        let remote = server.url("store")
        #expect(try on("a", ["prefetch", try list()]).status == 0)
        let plain = try on("a", ["--json", "prefetch", "--remote", remote, try list()])
        #expect(count(plain, "cached") == 12 && count(plain, "remote_writes") == 0)
        #expect(CacheInspection.files(under: server.storeDirectory).isEmpty)

        let readOnly = try on("a", ["--json", "prefetch", "--remote", remote + "|read-only", "--remote-reshare", try list()])
        #expect(count(readOnly, "remote_writes") == 0)
        #expect(CacheInspection.files(under: server.storeDirectory).isEmpty)

        let reshared = try on("a", ["--json", "prefetch", "--remote", remote, "--remote-reshare", try list()])
        #expect(count(reshared, "remote_writes") == 12)
        let writes = server.requests.filter { $0.uri.contains("store/") && $0.status == 201 }.count
        #expect(writes == 12)
        let second = try on("b", ["--json", "prefetch", "--remote", remote + "|read-only", try list()])
        #expect(count(second, "remote") == 12 && entries("a") == entries("b"))
        #expect(server.requests.filter { $0.uri.contains("store/") && $0.status == 201 }.count == writes)
    }

    @Test func noCredentialGoesIntoAnObjectOrOntoTheScreen() throws {
        let remote = server.url("private-store") + "|bearer-env=STORE_TOKEN"
        let url = faults.baseURL + "/need-auth/photo.jpg"
        let result = try on("a", ["-v", "--json", "fetch", "-u", "user:secret", "--remote", remote, url],
                            environment: ["STORE_TOKEN": "fleet-token"])
        #expect(result.status == 0, "\(result.standardError)")
        let objects = CacheInspection.files(under: server.storeDirectory)
        #expect(objects.count == 1)
        let object = try #require(FileManager.default.contents(atPath: server.storeDirectory + "/" + objects[0]))
        let text = String(decoding: object.prefix(512), as: UTF8.self)
        #expect(!text.contains("secret") && !text.contains("fleet-token") && !text.contains("user:"))
        #expect(!result.standardError.contains("fleet-token") && !result.output.contains("fleet-token"))
        // The password in a redis URL is shown as *** wherever the store is named.
        let redis = try on("a", ["-v", "fetch", "--remote", "redis://:hunter2@127.0.0.1:1", server.url("logo.png")])
        #expect(redis.status == 0 && !redis.standardError.contains("hunter2") && redis.standardError.contains("***"))
    }

    @Test func machinesSplittingOneListWithShardsDownloadEachURLOnce() throws {
        let many = (0..<40).map { server.url(RemoteStoreTests.images[$0 % RemoteStoreTests.images.count]) + "?n=\($0)" }
        let path = try work.write(lines: many + many.reversed())
        var taken: [Set<String>] = []
        for part in 0..<4 {
            let result = try on("m\(part)", ["--json", "prefetch", "--shard", "\(part)/4", "--remote", server.url("store"), path])
            #expect(result.status == 0, "\(result.standardError)")
            let lines = try result.jsonLines()
            let urls = Set(lines.compactMap { $0["path"] != nil ? $0["url"] as? String : nil })
            taken.append(urls)
            let summary = try #require(lines.last)
            #expect(count(summary, "urls") == urls.count && count(summary, "other_shards") == 80 - 2 * urls.count)
        }
        // Every URL in exactly one part, each downloaded once; parts are not empty.
        #expect(taken.reduce(0) { $0 + $1.count } == 40 && Set(taken.flatMap { $0 }).count == 40)
        #expect(taken.allSatisfy { !$0.isEmpty })
        #expect(originRequests == 40)
        // The same split on any machine, whatever the order of the list.
        let shuffled = try work.write(lines: many.shuffled(), to: "shuffled.txt")
        let again = try on("other", ["--json", "prefetch", "--shard", "2/4", "--remote", server.url("store"), shuffled])
        #expect(Set(try again.jsonLines().compactMap { $0["path"] != nil ? $0["url"] as? String : nil }) == taken[2])
        #expect(originRequests == 40, "a machine that took part 2 again got it from the store")
        for bad in ["4/4", "-1/4", "1/0", "a/b", "2"] {
            let refused = try on("x", ["prefetch", "--shard", bad, path])
            #expect(refused.status == 64 && refused.standardError.contains("--shard"), "\(bad): \(refused.standardError)")
        }
    }

    // MARK: Faults: every fetch still succeeds, nothing bad is stored, the fault is said once

    @Test func aClosedPortCostsOneMessageAndIsSkippedByTheNextRun() throws {
        let port = try NginxServer.freePort()
        let remote = "http://127.0.0.1:\(port)/store"
        let first = try on("a", ["--json", "prefetch", "--remote", remote, try list()])
        #expect(first.status == 0)
        #expect(count(first, "downloaded") == 12 && count(first, "remote_errors") >= 1)
        #expect(saidOnce(first, "connection refused"), "\(first.standardError)")
        #expect(problems("a").isEmpty)

        // Marked down for a minute under the cache root: the next process does not try it.
        let second = try on("a", ["--json", "-n", "other", "prefetch", "--remote", remote, try list()])
        #expect(second.status == 0 && count(second, "downloaded") == 12)
        let skipped = remoteMessages(second)
        #expect(skipped.count == 1 && skipped[0].contains("skipped"), "\(second.standardError)")
        // Nothing of that run reached the store: not a clean run (remote_errors 0 means every write landed).
        #expect(count(second, "remote_errors") == 1, "\(second.output)")
        #expect(FileManager.default.fileExists(atPath: work.appending("a/.remote-down")))
        // Another machine (cache root) keeps marks of its own.
        let elsewhere = try on("b", ["--json", "prefetch", "--remote", remote, try list()])
        #expect(remoteMessages(elsewhere).first?.contains("connection refused") == true)
    }

    @Test func aStoreKilledInTheMiddleOfAPrefetchLeavesTheRestToTheOrigin() throws {
        let redis = try RedisServer()
        #expect(try on("a", ["prefetch", "--remote", redis.url, try list()]).status == 0)
        let errors = work.appending("stderr")
        let run = try StreamingPrefetch(cacheRoot: work.appending("b"), home: home.path,
                                        arguments: ["--json", "prefetch", "--remote", redis.url, "-"], errorFile: errors)
        run.send([urls[0]])
        let first = try #require(run.firstLine())
        #expect(first.contains("\"cache\":\"remote\""))
        redis.kill()
        run.send(Array(urls.dropFirst()))
        let (status, lines) = try run.finish()
        #expect(status == 0)
        let summary = try #require(lines.last.flatMap { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] })
        #expect(count(summary, "remote") == 1 && count(summary, "downloaded") == 11 && count(summary, "failed") == 0)
        let said = try String(contentsOfFile: errors, encoding: .utf8).split(separator: "\n").filter { $0.contains("remote") }
        #expect(said.count == 1, "\(said)")
        #expect(problems("b").isEmpty)
    }

    @Test func aFullRedisRefusesWritesOnceAndFetchesGoOn() throws {
        let redis = try RedisServer(extra: ["--maxmemory", "100kb", "--maxmemory-policy", "noeviction"])
        let result = try on("a", ["--json", "prefetch", "--remote", redis.url, try list()])
        #expect(result.status == 0)
        #expect(count(result, "downloaded") == 12 && count(result, "remote_writes") == 0)
        #expect(saidOnce(result, "maxmemory"), "\(result.standardError)")
        let keys = try redis.keys()
        #expect(keys.isEmpty && problems("a").isEmpty)
    }

    @Test func aDamagedObjectIsAMissFetchedFromTheOriginAndWrittenAnew() throws {
        let remote = server.url("store")
        #expect(try on("a", ["prefetch", "--remote", remote, try list()]).status == 0)
        let objects = CacheInspection.files(under: server.storeDirectory)
        let damaged = server.storeDirectory + "/" + objects[3]
        var bytes = try #require(FileManager.default.contents(atPath: damaged))
        bytes[bytes.count - 10] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: damaged))

        let second = try on("b", ["--json", "prefetch", "--remote", remote, try list()])
        #expect(second.status == 0)
        let counts = try summary(second)
        #expect(count(counts, "remote") == 11 && count(counts, "downloaded") == 1 && count(counts, "remote_errors") == 1)
        #expect(saidOnce(second, "SHA-256"), "\(second.standardError)")
        #expect(problems("b").isEmpty && originRequests == 13)

        // Written anew: a third machine finds every object whole.
        let third = try on("c", ["--json", "prefetch", "--remote", remote, try list()])
        #expect(count(third, "remote") == 12 && count(third, "remote_errors") == 0)
    }

    @Test func aDamagedRedisObjectIsReplacedDespiteSetIfAbsent() throws {
        let redis = try RedisServer()
        #expect(try on("a", ["fetch", "--remote", redis.url, urls[0]]).status == 0)
        let key = try #require(try redis.keys().first)
        try redis.command(["set", key, "imgcache-object 1\nnot really"])
        let second = try on("b", ["--json", "fetch", "--remote", redis.url, urls[0]])
        #expect(second.status == 0 && remoteMessages(second).count == 1)
        #expect(try redis.value(key).starts(with: Data("imgcache-object 1\nsha256 ".utf8)))
        let third = try on("c", ["--json", "fetch", "--remote", redis.url, urls[0]])
        #expect(try third.jsonLines().first?["cache"] as? String == "remote")
    }

    @Test func newBytesFromTheOriginReplaceTheRedisObject() throws {
        // photo.jpg first, then logo.png at the same URL.
        let redis = try RedisServer()
        let url = faults.baseURL + "/swap/photo.jpg/logo.png"
        #expect(try on("a", ["fetch", "--remote", redis.url, url]).status == 0)
        // Downloaded again without reading any cache: the new bytes replace the store's old object.
        #expect(try on("a", ["fetch", "--no-cache-read", "--remote", redis.url, url]).status == 0)
        let third = try #require(try on("c", ["--json", "fetch", "--remote", redis.url, url]).jsonLines().first)
        #expect(third["cache"] as? String == "remote" && third["format"] as? String == "png", "\(third)")
    }

    @Test func anObjectAlreadyInRedisIsNotCountedAsWritten() throws {
        let redis = try RedisServer()
        let first = try on("a", ["--json", "prefetch", "--remote", redis.url, try list()])
        #expect(count(first, "remote_writes") == 12)
        // Shared again from the local hits: Redis keeps the objects it has (SET NX), and nothing is said written.
        let again = try on("a", ["--json", "-v", "prefetch", "--remote-reshare", "--remote", redis.url, try list()])
        #expect(count(again, "remote_writes") == 0, "\(again.standardError)")
        #expect(again.standardError.contains("object already there, kept"))
    }

    @Test func anObjectUnderAnotherURLsKeyIsRefused() throws {
        let redis = try RedisServer()
        #expect(try on("a", ["fetch", "--remote", redis.url, urls[0]]).status == 0)
        let first = try #require(try redis.keys().first)
        #expect(try on("a", ["fetch", "--remote", redis.url, urls[1]]).status == 0)
        let second = try #require(try redis.keys().first { $0 != first })
        // The first image's object, whole and valid, planted under the second's key.
        try redis.command(["copy", first, second, "replace"])
        let result = try on("c", ["--json", "fetch", "--remote", redis.url, urls[1]])
        #expect(try result.jsonLines().first?["cache"] as? String == "none", "\(result.output)")
        #expect(saidOnce(result, "bad object", "the object is for \(urls[0])"), "\(result.standardError)")
    }

    @Test func objectsOverThisRunsLimitsAreNotTheStoresFault() throws {
        let redis = try RedisServer()
        #expect(try on("a", ["prefetch", "--remote", redis.url, try list()]).status == 0)
        // Too many pixels for this run: refused here and at the origin alike; the store is not blamed.
        let small = try on("b", ["--json", "prefetch", "--max-pixels", "100", "--remote", redis.url, try list()])
        #expect(count(small, "remote_errors") == 0, "\(small.standardError)")
        #expect(remoteMessages(small).isEmpty, "\(small.standardError)")
    }

    @Test func aStoreThatRefusesWritesIsStillRead() throws {
        // A plain static location: objects are read (404: a miss), a PUT is not allowed (405).
        let remote = server.url("read-only-share")
        let first = try on("a", ["--json", "prefetch", "--remote", remote, try list()])
        #expect(first.status == 0 && count(first, "downloaded") == 12)
        #expect(saidOnce(first, "refuses writes", "still read, not written (add |read-only"), "\(first.standardError)")
        #expect(count(first, "remote_errors") == 1)
        // Not marked down: the next run reads it again.
        let second = try on("b", ["--json", "prefetch", "--remote", remote, try list()])
        #expect(!second.standardError.contains("skipped for a minute"), "\(second.standardError)")
    }

    @Test func aStandardWebDAVServerGetsItsCollectionsMade() throws {
        // wsgidav answers a PUT into a missing collection 409 (RFC 4918): imgcache makes them (MKCOL) and puts again.
        let dav = try WsgidavServer()
        let check = try on("a", ["remote", "check", "--remote", dav.url("cache")])
        #expect(check.status == 0, "\(check.output)\(check.standardError)")
        // wsgidav is Python: on a loaded machine it may be slower than nginx, which is not what is tested here.
        let cache = dav.url("cache") + "|keep-if-slow"
        let first = try on("a", ["--json", "prefetch", "--remote", cache, try list()])
        #expect(count(first, "remote_writes") == 12 && count(first, "remote_errors") == 0, "\(first.standardError)")
        #expect(dav.files().filter { $0.hasPrefix("cache/v1/") }.count == 12, "\(dav.files())")
        let second = try on("b", ["--json", "prefetch", "--remote", cache, try list()])
        #expect(count(second, "remote") == 12, "\(second.standardError)")
        // Its folders removed behind the run's back: made again, not taken for a failed store.
        try FileManager.default.removeItem(atPath: dav.root.appending("cache"))
        let again = (0..<12).map { urls[$0] + "?again=\($0)" }
        let remade = try on("b", ["--json", "prefetch", "--remote", cache, try work.write(lines: again)])
        #expect(count(remade, "remote_writes") == 12 && count(remade, "remote_errors") == 0, "\(remade.standardError)")
        // Many writers into a new store at once: two MKCOLs of one folder race (wsgidav answers the
        // slower 500), and every object is still written.
        let many = (0..<100).map { server.url(RemoteStoreTests.images[$0 % RemoteStoreTests.images.count]) + "?n=\($0)" }
        let raced = try on("c", ["--json", "prefetch", "-j", "8", "--remote", dav.url("fresh") + "|connect-timeout=5s|keep-if-slow", try work.write(lines: many)])
        #expect(count(raced, "remote_writes") == 100 && count(raced, "remote_errors") == 0, "\(raced.standardError)")
    }

    @Test func aSilentStoreCostsItsTimeoutOnce() throws {
        let remote = faults.baseURL + "/stall-store|timeout=300ms|connect-timeout=300ms"
        let result = try on("a", ["--json", "prefetch", "--remote", remote, try list()])
        #expect(result.status == 0)
        #expect(count(result, "downloaded") == 12 && count(result, "remote_errors") >= 1)
        #expect(saidOnce(result, "timed out"), "\(result.standardError)")
        #expect(problems("a").isEmpty)
    }

    @Test func anObjectOverMaxSizeIsRefusedAsItComesAndTheStoreIsNotBlamed() throws {
        for store in ["huge-store", "endless-store"] {
            let result = try on(store, ["--json", "prefetch", "-j", "1", "--max-size", "1M", "--remote", faults.baseURL + "/\(store)|read-only",
                                        try list()])
            #expect(result.status == 0 && count(result, "downloaded") == 12, "\(result.standardError)")
            #expect(count(result, "remote_errors") == 0 && remoteMessages(result).isEmpty, "\(result.standardError)")
            // Still asked for every image: refusing an object over this run's limit is no fault of the store.
            #expect(faults.requests.filter { $0.path.hasPrefix("/\(store)/") }.count == 12)
        }
        // Refused from its announced length: hardly more than the socket's buffers was sent.
        let sent = faults.requests.filter { $0.path.hasPrefix("/huge-store/") }.map { faults.bodyBytes(path: $0.path) }
        #expect(sent.allSatisfy { $0 < 8 << 20 }, "\(sent)")
    }

    @Test func redisObjectsOverMaxSizeAreRefusedWithoutBlame() throws {
        let redis = try RedisServer()
        #expect(try on("a", ["--json", "prefetch", "--remote", redis.url, try list()]).status == 0)
        // photo.jpg (2203 bytes) and anim.gif (3887) are over 1000 bytes: read no further than that.
        let result = try on("b", ["--json", "prefetch", "--max-size", "1000", "--remote", redis.url, try list()])
        #expect(count(result, "remote") == 10 && count(result, "failed") == 2, "\(result.output)")
        #expect(count(result, "remote_errors") == 0 && remoteMessages(result).isEmpty, "\(result.standardError)")
        #expect(problems("b").isEmpty)

        // Every object grown to 100 kB: refused after the limit's bytes, not read whole (and then
        // found padded, a bad object that would blame the store).
        for key in try redis.keys() { _ = try redis.command(["setrange", key, "100000", "x"]) }
        let grown = try on("c", ["--json", "prefetch", "--max-size", "1000", "--remote", redis.url, try list()])
        #expect(count(grown, "remote") == 0 && count(grown, "downloaded") == 10 && count(grown, "failed") == 2, "\(grown.output)")
        #expect(count(grown, "remote_errors") == 0 && remoteMessages(grown).isEmpty, "\(grown.standardError)")
    }

    /// 40 new URLs fetched with `remote` (-j 2): all downloaded, the store said slow (`what` take …)
    /// once and counted as one remote error.
    func prefetchBesideASlowStore(_ remote: String, _ what: String) throws -> (result: RunResult, urls: [String]) {
        let many = (0..<40).map { server.url(RemoteStoreTests.images[$0 % RemoteStoreTests.images.count]) + "?\(what)=\($0)" }
        let result = try on("a", ["--json", "prefetch", "-j", "2", "--remote", remote, try work.write(lines: many)])
        #expect(result.status == 0 && count(result, "downloaded") == 40, "\(result.standardError)")
        #expect(saidOnce(result, "is slow: \(what) take", "on average, downloads from the origin", "not used for the rest of this run"),
                "\(result.standardError)")
        #expect(count(result, "remote_errors") == 1)
        return (result, many)
    }

    @Test func aStoreSlowerThanTheOriginIsSaidOnceAndSkippedForTheRun() throws {
        // Each lookup takes 300 ms; the origin (nginx on loopback) answers in about a millisecond.
        let remote = faults.baseURL + "/slow-store/300"
        let many = try prefetchBesideASlowStore(remote, "lookups").urls
        let asked = faults.requests.filter { $0.method == "GET" && $0.path.hasPrefix("/slow-store/") }.count
        #expect(asked <= 12, "\(asked) lookups reached the slow store")
        // Not marked down: the next run measures it again.
        let next = try on("a", ["--json", "-n", "other", "prefetch", "-j", "2", "--remote", remote, try work.write(lines: many)])
        #expect(saidOnce(next, "is slow"), "\(next.standardError)")
        // Kept when told so: every lookup asked, every download written, nothing said.
        let some = (0..<16).map { server.url(RemoteStoreTests.images[$0 % RemoteStoreTests.images.count]) + "?k=\($0)" }
        func lookups() -> Int { faults.requests.filter { $0.method == "GET" && $0.path.hasPrefix("/slow-store/") }.count }
        let lookupsBefore = lookups()
        let kept = try on("k", ["--json", "prefetch", "-j", "4", "--remote", remote + "|keep-if-slow", try work.write(lines: some)])
        #expect(kept.status == 0 && count(kept, "downloaded") == 16 && count(kept, "remote_writes") == 16, "\(kept.standardError)")
        #expect(count(kept, "remote_errors") == 0 && !kept.standardError.contains("is slow"), "\(kept.standardError)")
        #expect(lookups() - lookupsBefore == 16)
    }

    /// --no-original keeps no original here, but the other machines may want other sizes of it.
    @Test func anOriginalNotKeptHereIsStillShared() throws {
        let redis = try RedisServer()
        let thumbs = try on("a", ["--json", "prefetch", "--thumbnail", "16x16", "--no-original", "--remote", redis.url, try list()])
        #expect(count(thumbs, "remote_writes") == 12, "\(thumbs.standardError)")
        let other = try on("b", ["--json", "prefetch", "--remote", redis.url, try list()])
        #expect(count(other, "remote") == 12 && count(other, "downloaded") == 0, "\(other.standardError)")
        // Sharing hits is sharing cached originals: refused with --no-original, which keeps none.
        let reshare = try on("a", ["prefetch", "--thumbnail", "16x16", "--no-original", "--remote-reshare", "--remote", redis.url, try list()])
        #expect(reshare.status == 64 && reshare.standardError.contains("--no-original"), "\(reshare.standardError)")
    }

    @Test func aStoreSlowToWriteIsSaidOnceAndNoLongerWaitedFor() throws {
        // Lookups answer at once (nothing there); each write takes 300 ms; the origin about a millisecond.
        _ = try prefetchBesideASlowStore(faults.baseURL + "/slow-write-store/300", "writes")
        let puts = faults.requests.filter { $0.method == "PUT" && $0.path.hasPrefix("/slow-write-store/") }.count
        #expect(puts < 30, "\(puts) writes were sent to the slow store")
    }

    @Test func aStoreThatAnswersGarbageIsGivenUpAfterAFewBadObjects() throws {
        let remote = faults.baseURL + "/garbage-store|read-only"
        let result = try on("a", ["--json", "prefetch", "-j", "1", "--remote", remote, try list()])
        #expect(result.status == 0 && count(result, "downloaded") == 12)
        // Said once, when it is given up: not once for each bad object before.
        let said = remoteMessages(result)
        #expect(said.count == 1, "\(result.standardError)")
        #expect(said.last?.contains("failed: 3 bad objects in a row") == true, "\(said)")
        #expect(count(result, "remote_errors") == 3)
    }

    @Test func aSilentRedisSaysItTimedOutAndAfterHowLong() throws {
        // The fault server takes the connection and waits for an HTTP request that a Redis command never completes.
        let host = faults.baseURL.replacingOccurrences(of: "http://", with: "")
        let remote = "redis://\(host)|timeout=300ms|connect-timeout=2s"
        let result = try on("a", ["--json", "prefetch", "--remote", remote, try list()])
        #expect(result.status == 0 && count(result, "downloaded") == 12)
        #expect(saidOnce(result, "timed out after 0.3 s"), "\(result.standardError)")
        #expect(!result.standardError.contains("Resource temporarily unavailable"), "\(result.standardError)")
    }

    @Test func aStoreThatNeverCompletesTheHandshakeIsAConnectTimeoutWithItsOwnValue() throws {
        let dropping = try FullBacklogListener()
        let remote = "http://127.0.0.1:\(dropping.port)/store|connect-timeout=500ms|timeout=20s"
        let result = try on("a", ["--json", "prefetch", "--remote", remote, try list()])
        #expect(result.status == 0 && count(result, "downloaded") == 12)
        #expect(saidOnce(result, "connect timed out after 0.5 s"), "\(result.standardError)")
        #expect(count(result, "remote_errors") == 1)
    }

    @Test func aStoreGivenUpIsSentNothingMore() throws {
        // 60 URLs, two transfers at a time: once the silent store is given up, what it was still
        // owed is dropped and nothing more is sent to it, rather than 60 requests each waiting its timeout.
        let many = (0..<60).map { server.url(RemoteStoreTests.images[$0 % RemoteStoreTests.images.count]) + "?n=\($0)" }
        let remote = faults.baseURL + "/stall-store|timeout=300ms|connect-timeout=300ms"
        let result = try on("a", ["--json", "prefetch", "-j", "2", "--remote", remote, try work.write(lines: many)])
        #expect(result.status == 0 && count(result, "downloaded") == 60, "\(result.standardError)")
        let sent = faults.requests.filter { $0.path.hasPrefix("/stall-store") }.count
        #expect(sent <= 6, "\(sent) requests reached the store")
        #expect(count(result, "remote_errors") == 1)
    }

    @Test func wrongCredentialsAreSaidOnceAndNeverPrinted() throws {
        let webdav = try on("a", ["--json", "prefetch", "--remote", server.url("private-store") + "|bearer-env=STORE_TOKEN", try list()],
                            environment: ["STORE_TOKEN": "a-wrong-token"])
        #expect(webdav.status == 0 && count(webdav, "downloaded") == 12)
        #expect(saidOnce(webdav, "401", "credentials"), "\(webdav.standardError)")
        #expect(!webdav.standardError.contains("a-wrong-token"))

        let redis = try RedisServer(password: "right")
        let refused = try on("b", ["--json", "prefetch", "--remote", redis.url + "|password-env=P", try list()], environment: ["P": "not-this-one"])
        #expect(refused.status == 0 && count(refused, "downloaded") == 12)
        let redisSaid = remoteMessages(refused)
        #expect(redisSaid.count == 1 && redisSaid[0].contains("password"), "\(refused.standardError)")
        #expect(!refused.standardError.contains("not-this-one"))
        #expect(problems("a").isEmpty && problems("b").isEmpty)
    }

    // MARK: Writes: prompt, and finished or dropped when the run is interrupted

    @Test func writesFollowTheDownloadsTheyShareClosely() throws {
        // 300 URLs from an origin that takes 10 ms for each, two transfers at a time, so that the
        // run has downloads queued (it reads 256 ahead): each write is answered soon after its
        // download was stored (as -v tells them, in order), not behind the downloads queued.
        let many = (0..<300).map { faults.baseURL + "/delay/10/" + RemoteStoreTests.images[$0 % RemoteStoreTests.images.count] + "?n=\($0)" }
        let result = try on("a", ["-v", "--json", "prefetch", "-j", "2", "--remote", server.url("store"), try work.write(lines: many)])
        #expect(result.status == 0 && count(result, "remote_writes") == 300, "\(result.standardError.suffix(2000))")
        var stored = 0, written = 0, worstLag = 0
        for line in result.errorLines {
            if line.contains(": HTTP 200, ") { stored += 1 }
            if line.hasSuffix(": object written") {
                written += 1
                worstLag = max(worstLag, stored - written)
            }
        }
        #expect(stored == 300 && written == 300, "\(stored) stored, \(written) written")
        #expect(worstLag <= 30, "a write was answered \(worstLag) downloads after its own")
    }

    /// Starts a prefetch of the first two images sharing to the fault server's `held-store`, and
    /// returns once both writes are held there; the second value is where its output goes.
    func prefetchWithHeldWrites() throws -> (Process, TemporaryDirectory) {
        let outputs = try TemporaryDirectory("imgcache-held")
        let process = try ImgCacheProcess.startCapturing(
            ["--cache-dir", work.appending("a"), "--json", "prefetch", "--remote", faults.baseURL + "/held-store|timeout=30s",
             try work.write(lines: Array(urls.prefix(2)))], home: home.path, outputs: outputs)
        for _ in 0..<2000 where faults.requests.filter({ $0.method == "PUT" }).count < 2 { usleep(5_000) }
        #expect(faults.requests.filter { $0.method == "PUT" }.count == 2)
        return (process, outputs)
    }

    /// Waits (at most 10 s) until the run's standard error holds `text`.
    func waitUntilSaid(_ text: String, in outputs: TemporaryDirectory) {
        for _ in 0..<2000 {
            if let said = try? String(contentsOfFile: outputs.appending("stderr"), encoding: .utf8), said.contains(text) { return }
            usleep(5_000)
        }
    }

    @Test func anInterruptedRunFinishesItsWritesWithinTheGracePeriod() throws {
        let (process, outputs) = try prefetchWithHeldWrites()
        kill(process.processIdentifier, SIGINT)
        waitUntilSaid("finishing the remote writes under way", in: outputs)
        faults.releaseHeldStore()
        let result = try ImgCacheProcess.result(of: process, outputs: outputs)
        #expect(result.status == 130)
        #expect(result.standardError.contains("finishing the remote writes under way (at most 5 s; interrupt again to drop them)"))
        #expect(result.standardError.contains("interrupted: the remote writes under way finished: 2 written"), "\(result.standardError)")
        #expect(count(result, "remote_writes") == 2 && count(result, "downloaded") == 2, "\(result.output)")
    }

    @Test func writesNotFinishedWithinTheGracePeriodAreDroppedAndSaidSo() throws {
        let (process, outputs) = try prefetchWithHeldWrites()
        kill(process.processIdentifier, SIGINT)
        let result = try ImgCacheProcess.result(of: process, outputs: outputs)
        #expect(result.status == 130)
        #expect(result.standardError.contains("2 remote writes dropped, not finished within 5 s"), "[\(result.standardError)]")
        #expect(count(result, "remote_writes") == 0 && count(result, "downloaded") == 2)
        // Each write that did not land is one of the run's remote errors, counted once.
        #expect(count(result, "remote_errors") == 2, "\(result.output)")
        #expect(problems("a").isEmpty)
    }

    @Test func theRunsDeadlineDropsTheWritesStillOut() throws {
        let result = try on("a", ["--json", "prefetch", "--deadline", "1", "--remote", faults.baseURL + "/held-store|timeout=30s",
                                  try work.write(lines: Array(urls.prefix(2)), to: "two.txt")])
        #expect(result.standardError.contains("2 remote writes dropped at the run's deadline"), "\(result.standardError)")
        #expect(!result.standardError.contains("finishing"))
        #expect(count(result, "downloaded") == 2 && count(result, "remote_writes") == 0)
        #expect(count(result, "remote_errors") == 2, "\(result.output)")
    }

    @Test func aSecondInterruptionDropsTheWritesAtOnce() throws {
        let (process, outputs) = try prefetchWithHeldWrites()
        kill(process.processIdentifier, SIGINT)
        waitUntilSaid("finishing the remote writes under way", in: outputs)
        kill(process.processIdentifier, SIGINT)
        let result = try ImgCacheProcess.result(of: process, outputs: outputs)
        #expect(result.status == 130)
        #expect(result.standardError.contains("interrupted again: 2 remote writes dropped"), "\(result.standardError)")
        #expect(!result.standardError.contains("not finished within"))
        #expect(count(result, "remote_errors") == 2, "\(result.output)")
    }

    /// A Redis store that takes connections and never answers: a socket listening on 127.0.0.1
    /// that never accepts (the kernel completes the handshakes and queues the requests).
    func hungRedis() throws -> (url: String, close: () -> Void) {
        let (listener, address) = try FullBacklogListener.listening(backlog: 16)
        return ("redis://127.0.0.1:\(UInt16(bigEndian: address.sin_port))|timeout=60s", { close(listener) })
    }

    @Test(arguments: [1, 2]) func aHungRedisStoreHoldsNoInterruptedRun(signals: Int) throws {
        let redis = try hungRedis()
        defer { redis.close() }
        let outputs = try TemporaryDirectory("imgcache-hung-redis")
        let process = try ImgCacheProcess.startCapturing(
            ["--cache-dir", work.appending("a"), "-v", "--json", "prefetch", "--remote", redis.url, try list()],
            home: home.path, outputs: outputs)
        waitUntilSaid("asking remote", in: outputs)
        kill(process.processIdentifier, SIGINT)
        if signals == 2 {
            waitUntilSaid("no new work is started", in: outputs)
            kill(process.processIdentifier, SIGINT)
        }
        // The store's timeout is a minute: the run ends long before, and by itself.
        let result = try ImgCacheProcess.result(of: process, outputs: outputs, limit: 20)
        #expect(result.status == 130, "\(result.standardError)")
        #expect(!result.standardError.contains("stopped at once"), "\(result.standardError)")
        #expect(count(result, "interrupted") == 12 && !result.standardError.contains("not used for a minute"), "\(result.standardError)")
        #expect(problems("a").isEmpty)
    }

    // MARK: remote check, configuration

    @Test func writesStillQueuedWhenInterruptedAreNotStarted() throws {
        // Six images, four transfers: the writes held at the store fill every slot, the rest wait.
        let outputs = try TemporaryDirectory("imgcache-held-many")
        let six = Array(urls.prefix(6))
        let process = try ImgCacheProcess.startCapturing(
            ["--cache-dir", work.appending("a"), "--json", "prefetch", "-j", "4", "--remote", faults.baseURL + "/held-store|timeout=30s",
             try work.write(lines: six, to: "six.txt")], home: home.path, outputs: outputs)
        for _ in 0..<2000 where faults.requests.filter({ $0.method == "PUT" }).count < 4 { usleep(5_000) }
        kill(process.processIdentifier, SIGINT)
        waitUntilSaid("finishing the remote writes under way", in: outputs)
        faults.releaseHeldStore()
        let result = try ImgCacheProcess.result(of: process, outputs: outputs)
        #expect(result.status == 130)
        #expect(result.standardError.contains("the remote writes under way finished: 4 written"), "\(result.standardError)")
        #expect(faults.requests.filter { $0.method == "PUT" }.count == 4, "a write started after the signal")
    }

    @Test func secretsWithLineBreaksOrNothingInThemAreRefused() throws {
        let url = urls[0]
        // A token file saved with Windows line ends: its first line, nothing more, is sent.
        let crlf = work.appending("token-crlf")
        try Data("tok123\r\nX-Injected: yes\r\n".utf8).write(to: URL(fileURLWithPath: crlf))
        let fromFile = try on("a", ["fetch", "--remote", faults.baseURL + "/garbage-store|read-only|bearer-file=\(crlf)", url])
        #expect(fromFile.status == 0, "\(fromFile.standardError)")
        let sent = faults.requests.filter { $0.path.hasPrefix("/garbage-store") }
        #expect(sent.count == 1 && sent[0].header("Authorization") == "Bearer tok123" && sent[0].header("X-Injected") == nil)
        // A line break inside an environment variable's token, or an empty token: the store is not used, nothing is sent.
        for (value, said) in [("x\r\nX-Evil: 1", "holds a line break"), ("", "is not set")] {
            let refused = try on("b-\(said.count)", ["fetch", "--remote", faults.baseURL + "/garbage-store|read-only|bearer-env=TOKEN", url],
                                 environment: ["TOKEN": value])
            #expect(refused.status == 0 && refused.standardError.contains(said), "\(refused.standardError)")
        }
        let empty = work.appending("token-empty")
        FileManager.default.createFile(atPath: empty, contents: Data("\n".utf8))
        let emptyFile = try on("b", ["remote", "check", "--remote", faults.baseURL + "/garbage-store|bearer-file=\(empty)"])
        #expect(emptyFile.status == 1 && emptyFile.standardError.contains("is empty") || emptyFile.output.contains("is empty"),
                "\(emptyFile.output)\(emptyFile.standardError)")
        #expect(faults.requests.filter { $0.path.hasPrefix("/garbage-store") }.count == 1)
        // A FIFO nobody writes to: waited for no longer than the store's timeout.
        let fifo = work.appending("token-fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        let waited = try on("c", ["remote", "check", "--remote", faults.baseURL + "/garbage-store|timeout=300ms|bearer-file=\(fifo)"])
        #expect(waited.status == 1 && (waited.output + waited.standardError).contains("nothing to read within 0.3 s"),
                "\(waited.output)\(waited.standardError)")
    }

    @Test func storeURLsAndAttributesThatCannotWorkAreRefused() throws {
        for (remote, said) in [("\(server.url("store"))?x=1", "has a query or fragment"),
                               ("\(server.url("store"))#part", "has a query or fragment"),
                               ("\(server.url("store"))|timeout=1s|timeout=2s", "attribute timeout is given twice"),
                               ("\(server.url("store"))|password-env=P", "password-env is for Redis stores")] {
            let refused = try on("a", ["remote", "check", "--remote", remote])
            #expect(refused.status == 64 && refused.standardError.contains(said), "\(remote): \(refused.standardError)")
        }
    }

    @Test func remoteCheckSaysWhichStoresWorkAndWhy() throws {
        let redis = try RedisServer()
        let closed = try NginxServer.freePort()
        let result = try on("a", ["remote", "check", "--remote", server.url("store"), "--remote", redis.url,
                                  "--remote", "http://127.0.0.1:\(closed)/store", "--remote", server.url("private-store")])
        #expect(result.status == 1)
        #expect(result.lines.count == 4)
        #expect(result.lines[0].hasPrefix(server.url("store") + ": OK"))
        #expect(result.lines[1].hasPrefix(redis.url + ": OK"))
        #expect(result.lines[2].contains("FAILED") && result.lines[2].contains("connection refused"))
        #expect(result.lines[3].contains("FAILED") && result.lines[3].contains("401"))
        // The probe leaves nothing behind.
        let emptied = try redis.keys().isEmpty
        #expect(CacheInspection.files(under: server.storeDirectory).isEmpty && emptied)

        let json = try on("a", ["--json", "remote", "check", "--remote", server.url("store")])
        #expect(json.status == 0)
        JSONContract.expect(try json.jsonLines().first, matches: "remote check")

        let none = try on("a", ["remote", "check"])
        #expect(none.status == 64 && none.standardError.contains("no remote store"))
    }

    @Test func theRemotesComeFromTheCommandLineTheEnvironmentOrTheNamespace() throws {
        let remote = server.url("store")
        #expect(try on("a", ["fetch", "--remote", remote, "--remember", urls[0]]).status == 0)
        let info = try on("a", ["cache-info"])
        #expect(info.output.contains("remotes:") && info.output.contains(remote + " (remembered)"))

        // IMGCACHE_REMOTE outranks the remembered list, --remote both, and none turns them off.
        let environment = ["IMGCACHE_REMOTE": "http://127.0.0.1:1/elsewhere"]
        let fromEnvironment = try on("a", ["--json", "cache-info"], environment: environment)
        #expect(try fromEnvironment.jsonLines().first?["remotes_source"] as? String == "IMGCACHE_REMOTE")
        let off = try on("a", ["--json", "prefetch", "--remote", "none", try list()], environment: environment)
        #expect(off.status == 0 && remoteMessages(off).isEmpty && count(off, "remote_writes") == 0)

        let bad = try on("a", ["fetch", urls[0]], environment: ["IMGCACHE_REMOTE": "ftp://nowhere"])
        #expect(bad.status == 64 && bad.standardError.contains("IMGCACHE_REMOTE"))
        let attribute = try on("a", ["fetch", "--remote", remote + "|timeout=soon", urls[0]])
        #expect(attribute.status == 64 && attribute.standardError.contains("timeout"))
        let rediss = try on("a", ["fetch", "--remote", "rediss://127.0.0.1", urls[0]])
        #expect(rediss.status == 64 && rediss.standardError.contains("TLS"))
        let password = try on("a", ["fetch", "--remote", "redis://:pw@127.0.0.1", "--remember", urls[0]])
        #expect(password.status == 64 && !password.standardError.contains(":pw@"))
    }
}
