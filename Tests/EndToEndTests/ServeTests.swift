import Foundation
import ImgCacheCore
import Synchronization
import Testing

/// `imgcache serve` as a page, a CDN and an attacker meet it: imgproxy's URLs against nginx
/// and the fault server on loopback, answers read off the socket.
@Suite final class ServeTests: FaultServerSuite {
    /// imgproxy's documented example pair.
    static let key = "943b421c9eb07c830af81030552c86009268de4e532ba2ee2eab8247c6da0881"
    static let salt = "520f986b998545b4785e0defbc4f3c1203f22de2374a3d53cb7a7fe9fea309c5"

    func serve(_ arguments: [String] = ["--allow-unsigned", "--allow-private-sources"], environment: [String: String] = [:],
               listen: [String] = ["--listen", "127.0.0.1:0"]) throws -> ImageServerProcess {
        try ImageServerProcess(arguments, cacheRoot: cacheRoot, home: home.path, environment: environment, listen: listen)
    }

    func header(_ reply: HTTPReply) throws -> ImageHeader { try ImageHeader.probe(Array(reply.body)) }

    @Test func sizesOfOneImageShareOneDownloadAndTheCommandsSeeThem() throws {
        let imgcache = try serve()
        for (options, width, height) in [("rs:fit:48:48", 48, 32), ("rs:fill:40:40", 40, 40), ("w:24", 24, 16), ("rs:force:30:50", 30, 50)] {
            let reply = try imgcache.request("/_/\(options)/plain/\(server.url("photo.jpg"))@png")
            #expect(reply.status == 200, "\(options): \(String(decoding: reply.body, as: UTF8.self))")
            let made = try header(reply)
            #expect(made.format == .png && made.width == width && made.height == height, "\(options): \(made.width)x\(made.height)")
            #expect(reply.header("content-type") == "image/png")
        }
        #expect(server.requests.filter { $0.uri == "/photo.jpg" }.count == 1)
        // The same namespace the commands read: the original and the four sizes.
        let listed = try fetch(["list"])
        #expect(listed.output.components(separatedBy: "\n").filter { $0.contains("photo.jpg") }.count == 5, "\(listed.output)")
        // A size asked again comes from memory; a new server finds it on disk.
        let again = try imgcache.request("/_/w:24/plain/\(server.url("photo.jpg"))@png")
        #expect(again.header("x-imgcache") == "memory")
        _ = imgcache.stop()
        let restarted = try serve()
        let fromDisk = try restarted.request("/_/w:24/plain/\(server.url("photo.jpg"))@png")
        #expect(fromDisk.header("x-imgcache") == "disk")
        #expect(fromDisk.body == again.body)
        #expect(server.requests.filter { $0.uri == "/photo.jpg" }.count == 1)
    }

    @Test func manyRequestsForOneNewSizeWaitForOneDownloadAndOneEncode() throws {
        let imgcache = try serve()
        let url = "/_/rs:fill:20:20/plain/\(faults.baseURL)/delay/300/photo.jpg@webp"
        let replies = Mutex([HTTPReply]())
        let port = imgcache.port
        DispatchQueue.concurrentPerform(iterations: 12) { _ in
            if let reply = try? HTTPReply.exchange(port: port, raw: HTTPReply.requestText(url)) { replies.withLock { $0.append(reply) } }
        }
        let all = replies.withLock { $0 }
        #expect(all.count == 12)
        #expect(all.allSatisfy { $0.status == 200 && $0.body == all[0].body })
        #expect(faults.requestCount(path: "/delay/300/photo.jpg") == 1)
        #expect(all.filter { $0.header("x-imgcache") == "made" }.count >= 1)
    }

    @Test func theFormatFollowsAcceptUnlessOneIsAsked() throws {
        let imgcache = try serve()
        let path = "/_/w:32/plain/\(server.url("photo.jpg"))"
        let cases: [(String?, String)] = [("image/avif,image/webp,image/apng,image/*,*/*;q=0.8", "image/avif"),
                                          ("image/webp,*/*", "image/webp"), ("image/avif;q=0,image/webp", "image/webp"),
                                          ("*/*", "image/jpeg"), (nil, "image/jpeg")]
        for (accept, type) in cases {
            let reply = try imgcache.request(path, headers: accept.map { [("Accept", $0)] } ?? [])
            #expect(reply.status == 200 && reply.header("content-type") == type, "\(accept ?? "none")")
            #expect(reply.header("vary") == "Accept")
        }
        let asked = try imgcache.request(path + "@png", headers: [("Accept", "image/avif")])
        #expect(asked.header("content-type") == "image/png")
        #expect(asked.header("vary") == nil)
        // An animation keeps its frames: WebP where allowed, else its own GIF.
        let animated = try imgcache.request("/_/w:16/plain/\(server.url("anim.gif"))", headers: [("Accept", "image/avif,image/webp")])
        #expect(animated.header("content-type") == "image/webp")
        #expect(try header(animated).frameCount ?? 1 > 1)
    }

    @Test func validatorsAnswerRepeatsWithNotModified() throws {
        let imgcache = try serve(["--allow-unsigned", "--allow-private-sources", "--max-age", "1h"])
        let path = "/_/w:32/plain/\(server.url("photo.jpg"))@jpg"
        let first = try imgcache.request(path)
        let etag = try #require(first.header("etag"))
        #expect(first.header("cache-control") == "public, max-age=3600")
        #expect(first.header("last-modified") != nil)
        #expect(first.header("content-length") == String(first.body.count))
        let repeated = try imgcache.request(path, headers: [("If-None-Match", etag)])
        #expect(repeated.status == 304 && repeated.body.isEmpty && repeated.header("etag") == etag)
        let other = try imgcache.request(path, headers: [("If-None-Match", "\"something-else\"")])
        #expect(other.status == 200)
        let head = try imgcache.request(path, method: "HEAD")
        #expect(head.status == 200 && head.body.isEmpty && head.header("content-length") == String(first.body.count))
    }

    @Test func failuresAreStatusCodesWithOneLine() throws {
        let imgcache = try serve()
        let cases: [(String, Int, String)] = [
            ("/_/w:10/plain/\(server.url("status/404"))", 404, "404"),
            ("/_/w:10/plain/\(server.url("status/410"))", 410, "410"),
            ("/_/w:10/plain/\(server.url("page.html"))", 415, "not an image"),
            ("/_/w:10/plain/\(server.url("status/500"))", 502, "500"),
            ("/_/blur:5/plain/\(server.url("photo.jpg"))", 400, "option 'blur' is not supported"),
            ("/_/w:99999/plain/\(server.url("photo.jpg"))", 400, "w"),
            ("/_/w:10/plain/ftp://127.0.0.1/a.jpg", 400, "scheme"),
            ("/_/w:10", 400, "no source"),
            ("/_/w:10/plain/\(server.url("photo.jpg"))@bmpx", 400, "not a format"),
        ]
        for (path, status, words) in cases {
            let reply = try imgcache.request(path)
            let text = String(decoding: reply.body, as: UTF8.self)
            #expect(reply.status == status, "\(path): \(text)")
            #expect(text.contains(words) && text.hasSuffix("\n") && text.dropLast().contains("\n") == false, "\(path): \(text)")
            #expect(reply.header("content-type")?.hasPrefix("text/plain") == true)
        }
        #expect(try imgcache.request("/_/w:10/plain/\(server.url("photo.jpg"))", method: "POST").status == 405)
        let body = try HTTPReply.exchange(port: imgcache.port, raw: "GET /_/w:10/plain/\(server.url("photo.jpg")) HTTP/1.1\r\nHost: x\r\n"
                                          + "Content-Length: 5\r\n\r\nhello")
        #expect(body.status == 413)
        let big = try serve(["--allow-unsigned", "--allow-private-sources", "--max-pixels", "1000"])
        #expect(try big.request("/_/w:10/plain/\(server.url("photo.jpg"))").status == 413)
    }

    @Test func signaturesAreImgproxysAndEveryPairOfARotationIsTaken() throws {
        let other = (key: "00112233445566778899aabbccddeeff", salt: "ffeeddccbbaa99887766554433221100")
        let imgcache = try serve(["--allow-private-sources"], environment: [
            "IMGPROXY_KEY": "\(other.key),\(ServeTests.key)", "IMGPROXY_SALT": "\(other.salt),\(ServeTests.salt)"])
        let signedPart = "/rs:fit:20:20/plain/\(server.url("photo.jpg"))@png"
        for pair in [other, (key: ServeTests.key, salt: ServeTests.salt)] {
            let signature = try ServeTests.sign(signedPart, key: pair.key, salt: pair.salt)
            #expect(try imgcache.request("/" + signature + signedPart).status == 200)
        }
        let good = try ServeTests.sign(signedPart, key: ServeTests.key, salt: ServeTests.salt)
        for forged in ["/_" + signedPart, "/insecure" + signedPart, "/" + good + signedPart.replacingOccurrences(of: "20:20", with: "2000:2000"),
                       "/" + String(good.dropLast()) + signedPart, "/" + good.uppercased() + signedPart] {
            #expect(try imgcache.request(forged).status == 403, "\(forged)")
        }
        // No key and no --allow-unsigned: the server does not start.
        #expect(throws: ImageServerProcess.StartFailure.self) { try self.serve(["--allow-private-sources"]) }
        // The key never reaches the log or the messages.
        _ = imgcache.stop()
        #expect(!imgcache.accessLog.contains(ServeTests.key) && !imgcache.standardError.contains(ServeTests.key))
    }

    /// imgproxy's signature of `path`, as its URL builders compute it (openssl here).
    static func sign(_ path: String, key: String, salt: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", """
            import base64, hashlib, hmac, sys
            digest = hmac.new(bytes.fromhex(sys.argv[1]), bytes.fromhex(sys.argv[2]) + sys.argv[3].encode(), hashlib.sha256).digest()
            print(base64.urlsafe_b64encode(digest).rstrip(b"=").decode())
            """, key, salt, path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func privateAddressesAreRefusedWhateverTheNameOrSpelling() throws {
        let imgcache = try serve(["--allow-unsigned"])
        for source in [server.url("photo.jpg"), "http://localhost:\(server.port)/photo.jpg", "http://[::ffff:127.0.0.1]:\(server.port)/photo.jpg",
                       "http://2130706433:\(server.port)/photo.jpg", "http://0.0.0.0:\(server.port)/photo.jpg"] {
            let reply = try imgcache.request("/_/w:10/plain/" + source)
            #expect(reply.status == 403, "\(source): \(String(decoding: reply.body, as: UTF8.self))")
            #expect(!String(decoding: reply.body, as: UTF8.self).contains("127.0.0.1:") || source.contains("127.0.0.1"))
        }
        #expect(server.requests.isEmpty)
        // Not remembered as the URL's failure: allowed, it is fetched.
        _ = imgcache.stop()
        let allowed = try serve()
        #expect(try allowed.request("/_/w:10/plain/" + server.url("photo.jpg")).status == 200)
    }

    @Test func onlyAllowedSourcesAreFetched() throws {
        let imgcache = try serve(["--allow-unsigned", "--allow-private-sources", "--allow-source", "http://127.0.0.1:\(server.port)/"])
        #expect(try imgcache.request("/_/w:10/plain/" + server.url("photo.jpg")).status == 200)
        for source in ["\(faults.baseURL)/image/photo.jpg", "http://127.0.0.1:\(server.port)@127.0.0.1:\(faults.port)/image/photo.jpg"] {
            let reply = try imgcache.request("/_/w:10/plain/" + source)
            #expect(reply.status == 403 || reply.status == 400, "\(source): \(reply.status)")
        }
        #expect(faults.requests.isEmpty)
        let refused = try? serve(["--allow-unsigned", "--allow-source", "http://127.0.0.1:\(server.port)"])
        #expect(refused == nil)
    }

    @Test func aSlowClientIsCutOffAndAHugeHeadRefused() throws {
        let imgcache = try serve(["--allow-unsigned", "--allow-private-sources", "--header-timeout", "1s", "--max-header-size", "4k"])
        // A head trickled byte by byte: closed at the deadline (the wait bounded at 30 s).
        let slow = try HTTPReply.connect(port: imgcache.port)
        defer { close(slow) }
        var closed = false
        for byte in "GET /health HTTP/1.1\r\nX-Slow: ".utf8 + Array(repeating: UInt8(ascii: "a"), count: 200) {
            var value = byte
            if Glibc.send(slow, &value, 1, Int32(MSG_NOSIGNAL)) <= 0 { closed = true; break }
            var pollee = pollfd(fd: slow, events: Int16(POLLIN), revents: 0)
            if poll(&pollee, 1, 100) > 0 { var sink = [UInt8](repeating: 0, count: 64); if recv(slow, &sink, 64, 0) <= 0 { closed = true; break } }
        }
        #expect(closed, "a head sent over 20 s was still being read")
        // An idle keep-alive connection is closed too.
        let idle = try HTTPReply.connect(port: imgcache.port)
        defer { close(idle) }
        #expect(HTTPReply.readAll(idle).isEmpty)
        let huge = try HTTPReply.exchange(port: imgcache.port, raw: "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "b", count: 8000))\r\n\r\n")
        #expect(huge.status == 431)
        #expect(try imgcache.request("/health").status == 200)
    }

    @Test func healthMetricsAndTheAccessLog() throws {
        let imgcache = try serve(["--allow-unsigned", "--allow-private-sources", "--json"])
        #expect(String(decoding: try imgcache.request("/health").body, as: UTF8.self) == "ok\n")
        _ = try imgcache.request("/_/w:10/plain/" + server.url("photo.jpg"))
        _ = try imgcache.request("/_/w:10/plain/" + server.url("photo.jpg"))
        _ = try imgcache.request("/_/w:10/plain/" + server.url("status/404"))
        let metrics = String(decoding: try imgcache.request("/metrics").body, as: UTF8.self)
        for line in ["imgcache_serve_requests_total{status=\"200\"} 3", "imgcache_serve_requests_total{status=\"404\"} 1",
                     "imgcache_serve_answers_total{tier=\"made\"} 1", "imgcache_serve_answers_total{tier=\"memory\"} 1",
                     "imgcache_serve_origin_fetches_total 2", "imgcache_serve_request_duration_seconds_count 4"] {
            #expect(metrics.contains(line + "\n"), "\(line)\n\(metrics)")
        }
        _ = imgcache.stop()
        let lines = imgcache.accessLog.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(lines.count == 5, "\(imgcache.accessLog)")
        #expect(lines.map { $0["status"] as? Int } == [200, 200, 200, 404, 200])
        #expect(lines[1]["tier"] as? String == "made" && lines[2]["tier"] as? String == "memory")
        #expect((lines[3]["error"] as? String)?.contains("404") == true)
    }

    @Test func sigtermFinishesTheRequestsInFlightThenExits() throws {
        let imgcache = try serve()
        let reply = Mutex<HTTPReply?>(nil)
        let started = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        let (port, path) = (imgcache.port, "/_/w:10/plain/\(faults.baseURL)/slow-drip/2/photo.jpg")
        DispatchQueue.global().async {
            started.signal()
            let answer = try? HTTPReply.exchange(port: port, raw: HTTPReply.requestText(path))
            reply.withLock { $0 = answer }
            done.signal()
        }
        started.wait()
        for _ in 0..<500 where faults.requestCount(path: "/slow-drip/2/photo.jpg") == 0 { usleep(10_000) }
        let status = imgcache.stop(with: SIGTERM)
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(reply.withLock { $0?.status } == 200)
        #expect(status == 0, "\(imgcache.standardError)")
        #expect(CacheInspection.temporaryFiles(under: cacheRoot).isEmpty)
    }

    @Test func aUnixSocketServesAndIsRemovedOnExit() throws {
        let socketPath = home.appending("serve.sock")
        let imgcache = try serve(listen: ["--listen", "unix:" + socketPath])
        let reply = try HTTPReply.exchange(port: 0, raw: HTTPReply.requestText("/_/w:10/plain/" + server.url("photo.jpg")), unixPath: socketPath)
        #expect(reply.status == 200)
        #expect(imgcache.stop() == 0)
        #expect(!FileManager.default.fileExists(atPath: socketPath))
    }

    @Test func aKilledServerLeavesTheCacheWhole() throws {
        let imgcache = try serve()
        let gotIt = DispatchSemaphore(value: 0)
        let (port, path) = (imgcache.port, "/_/w:10/plain/\(faults.baseURL)/slow-drip/3/photo.jpg")
        DispatchQueue.global().async {
            _ = try? HTTPReply.exchange(port: port, raw: HTTPReply.requestText(path))
            gotIt.signal()
        }
        for _ in 0..<500 where faults.requestCount(path: "/slow-drip/3/photo.jpg") == 0 { usleep(10_000) }
        usleep(300_000)
        _ = imgcache.stop(with: SIGKILL)
        _ = gotIt.wait(timeout: .now() + 30)
        let info = try fetch(["cache-info"])
        #expect(info.status == 0, "\(info.standardError)")
        let restarted = try serve()
        let reply = try restarted.request("/_/w:10/plain/\(faults.baseURL)/slow-drip/1/photo.jpg")
        #expect(reply.status == 200 && (try? header(reply).width) == 10)
    }

    @Test func instancesSharingARemoteStoreAskTheOriginOncePerOriginal() throws {
        let remote = server.url("store")
        let first = try serve(["--allow-unsigned", "--allow-private-sources", "--remote", remote])
        let second = try ImageServerProcess(["--allow-unsigned", "--allow-private-sources", "--remote", remote],
                                            cacheRoot: home.appending("other-cache"), home: home.path)
        let source = "\(faults.baseURL)/image/photo.jpg"
        #expect(try first.request("/_/w:24/plain/\(source)@png").status == 200)
        for size in ["w:24", "w:30", "rs:fill:20:20"] {
            let reply = try second.request("/_/\(size)/plain/\(source)@png")
            #expect(reply.status == 200, "\(size): \(String(decoding: reply.body, as: UTF8.self))")
        }
        #expect(faults.requestCount(path: "/image/photo.jpg") == 1)
    }

    @Test func aThousandConnectionsAtOnceAreAllAnswered() throws {
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        limit.rlim_cur = min(limit.rlim_max, 4096)
        setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        let imgcache = try serve()
        let count = limit.rlim_cur >= 2200 ? 1000 : 400
        var sockets: [Int32] = []
        defer { for socket in sockets { close(socket) } }
        for _ in 0..<count { sockets.append(try HTTPReply.connect(port: imgcache.port)) }
        for socket in sockets { HTTPReply.send(socket, HTTPReply.requestText("/health")) }
        var answered = 0
        for socket in sockets where (try? HTTPReply.parse(HTTPReply.readAll(socket)))?.status == 200 { answered += 1 }
        #expect(answered == count)
    }
}

/// What Docs/SERVE.md shows for running the server: its nginx front with `proxy_cache`, its
/// systemd units (checked by systemd-analyze, socket activation through systemd's own
/// activator), and a URL made by imgproxy's URL builder from PyPI.
@Suite final class ServeDeploymentTests: LoopbackCacheSuite {
    /// The fenced blocks of SERVE.md in `language`, in order.
    static func blocks(_ language: String) throws -> [String] {
        let text = try String(contentsOf: Paths.repository.appendingPathComponent("Docs/SERVE.md"), encoding: .utf8)
        var blocks: [String] = []
        var body: [String]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "```" + language { body = []; continue }
            if line == "```", let done = body { blocks.append(done.joined(separator: "\n")); body = nil; continue }
            body?.append(String(line))
        }
        return blocks
    }

    @Test func theNginxFrontKeepsAnswersAndPassesPlainSourcesWhole() throws {
        let imgcache = try ImageServerProcess(["--allow-unsigned", "--allow-private-sources"], cacheRoot: cacheRoot, home: home.path)
        let work = try TemporaryDirectory("imgcache-front")
        let port = try NginxServer.freePort()
        let snippet = try #require(Self.blocks("nginx").first)
            .replacingOccurrences(of: "/var/cache/nginx/images", with: work.appending("cache"))
            .replacingOccurrences(of: "listen 80;", with: "listen 127.0.0.1:\(port);")
            .replacingOccurrences(of: "127.0.0.1:8080", with: "127.0.0.1:\(imgcache.port)")
        let temporary = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map { "\($0)_temp_path \(work.appending($0));" }.joined(separator: " ")
        let config = """
            daemon off; master_process off; pid \(work.appending("nginx.pid")); error_log \(work.appending("error.log"));
            events {}
            http { access_log off; \(temporary)
            \(snippet)
            }
            """
        try config.write(toFile: work.appending("nginx.conf"), atomically: true, encoding: .utf8)
        let nginx = Process()
        nginx.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        nginx.arguments = ["-c", work.appending("nginx.conf"), "-p", work.path]
        nginx.standardError = FileHandle.nullDevice
        try nginx.run()
        defer { kill(nginx.processIdentifier, SIGKILL); nginx.waitUntilExit() }
        #expect(NginxServer.waitUntilListening(port: port, while: nginx))
        let path = "/_/rs:fill:40:30/plain/\(server.url("photo.jpg"))"
        var statuses: [String] = []
        for _ in 0..<3 {
            let reply = try HTTPReply.exchange(port: port, raw: HTTPReply.requestText(path, headers: [("Accept", "image/webp")]))
            #expect(reply.status == 200 && reply.header("content-type") == "image/webp")
            statuses.append(reply.header("x-cache-status") ?? "")
        }
        #expect(statuses == ["MISS", "HIT", "HIT"])
        // Another Accept is another copy (Vary: Accept).
        let other = try HTTPReply.exchange(port: port, raw: HTTPReply.requestText(path, headers: [("Accept", "image/avif")]))
        #expect(other.header("content-type") == "image/avif" && other.header("x-cache-status") == "MISS")
        _ = imgcache.stop()
        #expect(imgcache.accessLog.split(separator: "\n").count == 2, "\(imgcache.accessLog)")
    }

    @Test func theUnitsVerifyAndSocketActivationServes() throws {
        // The package's four units, and SERVE.md's two drop-ins applied to them.
        let work = try TemporaryDirectory("imgcache-units")
        let names = ["imgcache-serve.service", "imgcache-serve.socket", "imgcache-clean.service", "imgcache-clean.timer"]
        var service = ""
        for name in names {
            let text = try String(contentsOf: Paths.repository.appendingPathComponent("packaging/systemd/" + name), encoding: .utf8)
                .replacingOccurrences(of: "/usr/bin/imgcache", with: Paths.binary)
            if name == "imgcache-serve.service" { service = text }
            try text.write(toFile: work.appending(name), atomically: true, encoding: .utf8)
        }
        let dropIns = try Self.blocks("ini")
        #expect(dropIns.count == 2 && dropIns[0].contains("systemctl edit imgcache-serve.socket")
                && dropIns[1].contains("systemctl edit imgcache-serve.service"), "\(dropIns)")
        for (unit, dropIn) in zip(["imgcache-serve.socket", "imgcache-serve.service"], dropIns) {
            try FileManager.default.createDirectory(atPath: work.appending(unit + ".d"), withIntermediateDirectories: true)
            try dropIn.replacingOccurrences(of: "/usr/bin/imgcache", with: Paths.binary)
                .write(toFile: work.appending(unit + ".d/override.conf"), atomically: true, encoding: .utf8)
        }
        let verified = try ImgCacheProcess.runShell("systemd-analyze verify --man=no " + names.map { "./" + $0 }.joined(separator: " "),
                                                    environment: [:], home: home.path, workingDirectory: work.path)
        #expect(verified.status == 0 && verified.standardError.isEmpty, "\(verified.standardError)")
        // Sandboxed as Docs/SERVE.md rates them.
        for (unit, rating) in [("imgcache-serve.service", "1.6 OK"), ("imgcache-clean.service", "0.9 SAFE")] {
            let security = try ImgCacheProcess.runShell("systemd-analyze security --offline=true --no-pager ./" + unit, environment: [:],
                                                        home: home.path, workingDirectory: work.path)
            #expect(security.output.contains("for \(unit): \(rating)"), "\(security.output.suffix(300))")
        }
        let serveDocs = try String(contentsOf: Paths.repository.appendingPathComponent("Docs/SERVE.md"), encoding: .utf8)
        #expect(serveDocs.contains("rates it 1.6 (\"OK\") and\n`imgcache-clean.service` 0.9 (\"SAFE\")"))
        // The service's own command line, as the unit gives it.
        let execStart = service.split(separator: "\n").first { $0.hasPrefix("ExecStart=") }.map { String($0.dropFirst("ExecStart=".count)) } ?? ""
        let command = execStart.split(separator: " ").map(String.init)
        #expect(command.first == Paths.binary && command.dropFirst().first == "serve", "\(execStart)")
        // The socket passed as systemd passes it (LISTEN_FDS), the server started without --listen.
        let port = try NginxServer.freePort()
        let outputs = try TemporaryDirectory("imgcache-activate")
        let activator = Process()
        activator.executableURL = URL(fileURLWithPath: "/usr/bin/systemd-socket-activate")
        activator.arguments = ["-l", "127.0.0.1:\(port)"] + command + ["--allow-unsigned", "--allow-private-sources"]
        activator.environment = ["HOME": home.path, "PATH": "/usr/bin:/bin", "IMGCACHE_DIR": cacheRoot]
        activator.standardOutput = FileHandle.nullDevice
        activator.standardError = FileHandle(forWritingAtPath: outputs.appending("stderr")) ?? {
            FileManager.default.createFile(atPath: outputs.appending("stderr"), contents: nil)
            return FileHandle(forWritingAtPath: outputs.appending("stderr"))!
        }()
        try activator.run()
        defer { kill(activator.processIdentifier, SIGKILL); activator.waitUntilExit() }
        #expect(NginxServer.waitUntilListening(port: port, while: activator))
        let reply = try HTTPReply.exchange(port: port, raw: HTTPReply.requestText("/_/w:12/plain/" + server.url("photo.jpg")))
        #expect(reply.status == 200 && (try? ImageHeader.probe(Array(reply.body)).width) == 12)
        kill(activator.processIdentifier, SIGTERM)
        for _ in 0..<3000 where activator.isRunning { usleep(10_000) }
        #expect(!activator.isRunning && activator.terminationStatus == 0)
        #expect(!((try? String(contentsOfFile: outputs.appending("stderr"), encoding: .utf8)) ?? "").contains("127.0.0.1:8080"))
    }

    @Test func chromiumGetsAVIFForEveryImageOfAPageAndDecodesIt() throws {
        let imgcache = try ImageServerProcess(["--allow-unsigned", "--allow-private-sources", "--json"], cacheRoot: cacheRoot, home: home.path)
        let base = "http://127.0.0.1:\(imgcache.port)/_"
        let images: [(String, Int, Int)] = [("rs:fill:60:40/plain/\(server.url("photo.jpg"))", 60, 40),
                                            ("w:50/plain/\(server.url("logo.png"))", 50, 0), ("rs:fit:20:20/plain/\(server.url("sticker.webp"))", 20, 0),
                                            ("w:16/plain/\(server.url("anim.gif"))", 16, 0)]
        var page = "<!DOCTYPE html><html><body>"
        for (index, image) in images.enumerated() { page += "<img id=i\(index) src=\"\(base)/\(image.0)\">" }
        page += "<picture><source srcset=\"\(base)/w:30/plain/\(server.url("photo.jpg"))@webp\" type=image/webp><img id=p src=\"\(base)/w:30/plain/\(server.url("photo.jpg"))@jpg\"></picture>"
        page += "</body></html>\n"
        let work = try TemporaryDirectory("imgcache-serve-page")
        try page.write(toFile: work.appending("page.html"), atomically: true, encoding: .utf8)
        let check = """
            await Promise.all([...document.images].map(i => i.complete ? 0 : new Promise(r => { i.onload = i.onerror = r; })));
            return [...document.images].map(i => ({id: i.id, width: i.naturalWidth, height: i.naturalHeight, src: i.currentSrc}));
            """
        try check.write(toFile: work.appending("check.js"), atomically: true, encoding: .utf8)
        let looked = try ImgCacheProcess.runShell("python3 '\(Paths.repository.path)/Tests/Fixtures/browser/look.py' 'file://\(work.appending("page.html"))' "
                                                  + "--evaluate '\(work.appending("check.js"))'", environment: [:], home: work.path, workingDirectory: work.path)
        let shown = ((try? JSONSerialization.jsonObject(with: looked.standardOutput) as? [String: Any])?["value"] as? [[String: Any]]) ?? []
        #expect(shown.count == images.count + 1, "\(looked.output) \(looked.standardError)")
        for (index, image) in images.enumerated() {
            let seen = shown.first { $0["id"] as? String == "i\(index)" }
            #expect(seen?["width"] as? Int == image.1, "\(image.0): \(String(describing: seen))")
            if image.2 > 0 { #expect(seen?["height"] as? Int == image.2) }
        }
        #expect(shown.first { $0["id"] as? String == "p" }?["width"] as? Int == 30)
        _ = imgcache.stop()
        // What Chromium's Accept chose: AVIF for the stills, WebP for the animation, the <source>'s WebP.
        let types = imgcache.accessLog.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(types.count == images.count + 1 && types.allSatisfy { $0["status"] as? Int == 200 }, "\(imgcache.accessLog)")
        let listed = try fetch(["--json", "list"]).output
        #expect(listed.components(separatedBy: "-format(avif)").count - 1 == 3, "\(listed)")
        #expect(listed.contains("thumbnail(16x)-reencode-format(webp)"), "\(listed)")
    }

    @Test func aURLFromImgproxysPythonBuilderIsServed() throws {
        let key = ServeTests.key, salt = ServeTests.salt
        let imgcache = try ImageServerProcess(["--allow-private-sources"], cacheRoot: cacheRoot, home: home.path,
                                              environment: ["IMGPROXY_KEY": key, "IMGPROXY_SALT": salt])
        let script = """
            import sys
            from imgproxy import ImgProxy
            for options in [dict(width=40, height=30, resizing_type='fill'), dict(width=24, extension='webp'), dict(width=20, height=20, resizing_type='fit', enlarge=True)]:
                print(ImgProxy(sys.argv[1], key=sys.argv[2], salt=sys.argv[3], **options)())
            """
        let made = try ImgCacheProcess.runShell("python3 -c \"$SCRIPT\" '\(server.url("photo.jpg"))' \(key) \(salt)",
                                                environment: ["SCRIPT": script, "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"],
                                                home: home.path, workingDirectory: home.path)
        let paths = made.output.split(separator: "\n").map(String.init)
        #expect(made.status == 0 && paths.count == 3, "\(made.standardError)")
        let expected = [(40, 30, ImageFormat.jpeg), (24, 16, .webp), (20, 13, .jpeg)]
        for (path, (width, height, format)) in zip(paths, expected) {
            let reply = try imgcache.request(path)
            let header = try? ImageHeader.probe(Array(reply.body))
            #expect(reply.status == 200 && header?.width == width && header?.height == height && header?.format == format,
                    "\(path): \(reply.status) \(String(decoding: reply.body.prefix(200), as: UTF8.self))")
        }
    }
}

/// What a web developer found trying the server from outside, each kept as a case.
@Suite final class ServeTrialTests: FaultServerSuite {
    func serve(_ arguments: [String] = ["--allow-unsigned", "--allow-private-sources"]) throws -> ImageServerProcess {
        try ImageServerProcess(arguments, cacheRoot: cacheRoot, home: home.path)
    }

    @Test func itServesAsAUserWithoutPrivileges() throws {
        guard getuid() == 0 else { return }  // dropping to another user needs root; a user's run is that case already
        let work = try TemporaryDirectory("imgcache-serve-user")
        chmod(work.path, 0o755)
        for name in ["imgcache", "imgcache-serve"] {
            let from = URL(fileURLWithPath: Paths.binary).deletingLastPathComponent().appendingPathComponent(name).path
            try FileManager.default.copyItem(atPath: from, toPath: work.appending(name))
        }
        let cache = work.appending("cache")
        try FileManager.default.createDirectory(atPath: cache, withIntermediateDirectories: true)
        chown(cache, 65534, 65534)
        let port = try NginxServer.freePort()
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        server.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", work.appending("imgcache"), "--cache-dir", cache, "serve",
                            "--allow-unsigned", "--allow-private-sources", "--listen", "127.0.0.1:\(port)"]
        server.environment = ["HOME": cache, "PATH": "/usr/bin:/bin"]
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        defer { kill(server.processIdentifier, SIGKILL); server.waitUntilExit() }
        #expect(NginxServer.waitUntilListening(port: port, while: server))
        let reply = try HTTPReply.exchange(port: port, raw: HTTPReply.requestText("/_/w:10/plain/" + self.server.url("photo.jpg")))
        #expect(reply.status == 200 && (try? ImageHeader.probe(Array(reply.body)).width) == 10)
    }

    @Test func metadataNeverGoesOutAndQualityAlwaysApplies() throws {
        let imgcache = try serve()
        let source = server.url("rotated.jpg")
        #expect(try Paths.fixture("rotated.jpg").range(of: Data("Exif".utf8)) != nil)
        for path in ["/_/plain/\(source)", "/_/sm:1/plain/\(source)@jpg", "/_/rs:fit:2000:2000/plain/\(source)@jpg", "/_/w:32/plain/\(source)@jpg"] {
            let reply = try imgcache.request(path)
            #expect(reply.status == 200 && reply.body.range(of: Data("Exif".utf8)) == nil, "\(path)")
        }
        let low = try imgcache.request("/_/q:5/plain/\(server.url("photo.jpg"))@jpg")
        let high = try imgcache.request("/_/q:95/plain/\(server.url("photo.jpg"))@jpg")
        #expect(low.body.count < high.body.count)
    }

    @Test func extendPadsToTheBoxWithoutEnlarging() throws {
        let imgcache = try serve()
        let reply = try imgcache.request("/_/rs:fit:200:200:0:1/bg:ff0000/plain/\(server.url("photo.jpg"))@png")
        let header = try ImageHeader.probe(Array(reply.body))
        #expect(header.width == 200 && header.height == 200)
    }

    @Test func aBurstOfSizesOfOneNewOriginalGetsNo503() throws {
        let imgcache = try serve(["--allow-unsigned", "--allow-private-sources", "--workers", "2", "--queue", "2"])
        let port = imgcache.port, base = faults.baseURL
        let statuses = Mutex([Int]())
        DispatchQueue.concurrentPerform(iterations: 60) { index in
            let path = "/_/rs:fill:\(20 + index % 10):\(20 + index % 10)/plain/\(base)/delay/300/photo.jpg@webp"
            let status = (try? HTTPReply.exchange(port: port, raw: HTTPReply.requestText(path)))?.status ?? 0
            statuses.withLock { $0.append(status) }
        }
        let all = statuses.withLock { $0 }
        #expect(all.count == 60 && all.allSatisfy { $0 == 200 }, "\(all)")
        #expect(faults.requestCount(path: "/delay/300/photo.jpg") == 1)
    }

    @Test func aRefusedHeadIsTimedFromItsArrival() throws {
        let imgcache = try serve()
        let huge = try HTTPReply.exchange(port: imgcache.port, raw: "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "b", count: 40_000))\r\n\r\n")
        #expect(huge.status == 431)
        let metrics = String(decoding: try imgcache.request("/metrics").body, as: UTF8.self)
        let sum = metrics.split(separator: "\n").first { $0.hasPrefix("imgcache_serve_request_duration_seconds_sum ") }
        #expect((sum?.split(separator: " ").last.flatMap { Double($0) } ?? 99) < 10, "\(metrics)")
    }

    @Test func whatAnotherProcessCachedFromAPrivateSourceIsRefusedToo() throws {
        let allowing = try serve()
        #expect(try allowing.request("/_/w:10/plain/\(server.url("photo.jpg"))").status == 200)
        let refusing = try serve(["--allow-unsigned"])
        #expect(try refusing.request("/_/w:10/plain/\(server.url("photo.jpg"))").status == 403)
        #expect(try refusing.request("/_/w:10/plain/\(server.url("photo.jpg"))").status == 403)
    }

    @Test func aRequestSentJustAfterSIGTERMOnAnOpenConnectionIsAnswered() throws {
        let imgcache = try serve()
        let connection = try HTTPReply.connect(port: imgcache.port)
        defer { close(connection) }
        // A keep-alive connection that has had an answer already (one the server accepted).
        HTTPReply.send(connection, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        var first = Data()
        var byte = [UInt8](repeating: 0, count: 1)
        while !first.ends(with: Data("ok\n".utf8)), first.count < 4096, recv(connection, &byte, 1, 0) == 1 { first.append(byte[0]) }
        #expect(first.ends(with: Data("ok\n".utf8)))
        kill(imgcache.process.processIdentifier, SIGTERM)
        // Draining once it accepts no new connection (bounded: 10 s).
        for _ in 0..<1000 {
            guard let probe = try? HTTPReply.connect(port: imgcache.port) else { break }
            close(probe)
            usleep(10_000)
        }
        HTTPReply.send(connection, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        let reply = try HTTPReply.parse(HTTPReply.readAll(connection))
        #expect(reply.status == 200 && String(decoding: reply.body, as: UTF8.self) == "draining\n")
        #expect(reply.header("connection") == "close")
        #expect(imgcache.stop(with: SIGTERM) == 0)
    }

    @Test func smallThingsAsTheDocsSayThem() throws {
        // An empty argument keeps the value; a variant over the pixel limit is a 413; a 304 is counted as one.
        let imgcache = try serve(["--allow-unsigned", "--allow-private-sources", "--max-pixels", "100000"])
        #expect(try imgcache.request("/_/w:/w:20/h:/plain/\(server.url("photo.jpg"))@png").status == 200)
        #expect(try imgcache.request("/_/w:3000/dpr:8/el:1/plain/\(server.url("photo.jpg"))@png").status == 413)
        let first = try imgcache.request("/_/w:20/plain/\(server.url("photo.jpg"))@png")
        _ = try imgcache.request("/_/w:20/plain/\(server.url("photo.jpg"))@png", headers: [("If-None-Match", first.header("etag") ?? "")])
        let metrics = String(decoding: try imgcache.request("/metrics").body, as: UTF8.self)
        #expect(metrics.contains("imgcache_serve_answers_total{tier=\"not_modified\"} 1\n"), "\(metrics)")
        // A preset that cannot be read is said at start.
        let presets = home.appending("presets")
        try "bad=blur:3\n".write(toFile: presets, atomically: true, encoding: .utf8)
        #expect(throws: ImageServerProcess.StartFailure.self) { try self.serve(["--allow-unsigned", "--presets", presets]) }
    }

    // MARK: What the attacker found

    @Test func anSVGWithScriptIsNeverSentAsSVG() throws {
        let site = try TemporaryDirectory("imgcache-serve-svg")
        try "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"40\" height=\"30\" onload=\"alert(1)\"><script>alert(2)</script><rect width=\"40\" height=\"30\" fill=\"red\"/></svg>\n"
            .write(toFile: site.appending("xss.svg"), atomically: true, encoding: .utf8)
        let origin = try NginxServer(serving: site.url)
        let imgcache = try serve()
        for path in ["/_/plain/\(origin.url("xss.svg"))", "/_/sm:1/q:80/plain/\(origin.url("xss.svg"))", "/_/rs:fit:0:0/plain/\(origin.url("xss.svg"))"] {
            let reply = try imgcache.request(path, headers: [("Accept", "text/html,*/*;q=0.8")])
            #expect(reply.status == 200 && reply.header("content-type") == "image/png", "\(path): \(reply.header("content-type") ?? "")")
            #expect(reply.body.range(of: Data("script".utf8)) == nil)
            #expect(reply.header("content-security-policy")?.contains("sandbox") == true && reply.header("x-content-type-options") == "nosniff")
        }
    }

    @Test func aClientThatReadsNoAnswerHoldsOneNotOnePerRequest() throws {
        let imgcache = try serve()
        let path = "/_/rs:force:3000:3000:1/q:100/plain/\(server.url("photo.jpg"))@jpg"
        let warm = try imgcache.request(path)
        #expect(warm.status == 200 && warm.body.count > 250_000, "\(warm.body.count)")
        func peak() -> Int {
            let status = (try? String(contentsOfFile: "/proc/\(imgcache.process.processIdentifier)/status", encoding: .utf8)) ?? ""
            return Int(status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }?.split(separator: " ").dropFirst().first ?? "0") ?? 0
        }
        let before = peak()
        var sockets: [Int32] = []
        defer { for socket in sockets { close(socket) } }
        for _ in 0..<8 {
            let socket = try HTTPReply.connect(port: imgcache.port)
            var small: Int32 = 4096
            setsockopt(socket, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
            HTTPReply.send(socket, String(repeating: "GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n", count: 200))
            sockets.append(socket)
        }
        // What the server does with them is done once /health answers behind them (bounded: 10 s).
        for _ in 0..<20 { _ = try? imgcache.request("/health"); usleep(50_000) }
        let grown = (peak() - before) / 1024
        // 1,600 answers of over 250 kB each were asked: held all at once they would be over 400 MB.
        #expect(grown < 150, "the server grew \(grown) MB")
    }

    @Test func credentialsGivenToServeReachTheServerWholeAndNoLog() throws {
        let imgcache = try serve(["--allow-unsigned", "--allow-private-sources", "-u", "bob:TopSecret9"])
        let arguments = (try? String(contentsOfFile: "/proc/\(imgcache.process.processIdentifier)/cmdline", encoding: .utf8)) ?? ""
        #expect(!arguments.isEmpty && !arguments.contains("TopSecret9"))
        // The @ of user information is escaped in a plain source (the last @ starts the extension).
        let reply = try imgcache.request("/_/w:10/plain/http://alice:S3cretPW99%40127.0.0.1:\(server.port)/photo.jpg")
        #expect(reply.status == 200)
        // Also with the source percent-encoded whole.
        #expect(try imgcache.request("/_/w:12/plain/http%3A%2F%2Falice%3AS3cretPW99%40127.0.0.1%3A\(server.port)%2Fphoto.jpg").status == 200)
        _ = imgcache.stop()
        #expect(!imgcache.accessLog.contains("S3cretPW99") && imgcache.accessLog.contains("alice:***"), "\(imgcache.accessLog)")
        // nginx saw the credentials the command line gave (-u), whole.
        #expect(server.requests.contains { $0.uri == "/photo.jpg" })
    }

    @Test func clearWhileServingFromDiskGivesNoError() throws {
        let imgcache = try serve(["--allow-unsigned", "--allow-private-sources", "--memory-cache", "0"])
        let path = "/_/w:20/plain/\(server.url("photo.jpg"))@png"
        var statuses: [Int] = []
        for round in 0..<30 {
            if round % 3 == 0 { _ = try fetch(["clear"]) }
            statuses.append(try imgcache.request(path).status)
        }
        #expect(statuses.allSatisfy { $0 == 200 }, "\(statuses)")
    }
}
