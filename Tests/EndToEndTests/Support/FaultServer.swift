import Foundation
import Glibc

/// A request as the fault server read it off the wire.
struct RecordedRequest: Sendable {
    /// The method from the request line.
    let method: String
    /// The target exactly as sent; absolute-form ("http://host/x") when sent to a proxy.
    let target: String
    /// The target without query string, and without scheme and authority for absolute-form.
    let path: String
    /// Header fields in the order they were sent.
    let headers: [(name: String, value: String)]
    /// 1-based serial of the TCP connection the request arrived on.
    let connection: Int
    /// When its head had arrived (seconds since boot).
    var receivedAt = ProcessInfo.processInfo.systemUptime
    /// The same, on the wall clock (seconds since 1970), for dates a server sends.
    var receivedOnWallClock = Date().timeIntervalSince1970

    /// The value of the first header called `name`, compared case-insensitively.
    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

/// A scriptable HTTP/1.1 server on 127.0.0.1 that produces network faults on
/// request (stalls, truncation, resets, endless bodies, flaky statuses), for the
/// downloader tests. Runs in-process: one thread accepts, one thread per connection.
///
/// Sendable because every mutable property is read and written only while
/// holding `lock` (an NSCondition, whose mutex also serves as the gate's
/// condition variable); `port`, `directory` and `listener` never change.
final class FaultServer: @unchecked Sendable {
    /// The kernel-chosen port the server listens on.
    let port: Int
    private let directory: String
    private let listener: Int32

    private let lock = NSCondition()
    private(set) var stopped = false
    private var listenerOpen = true
    private var open: Set<Int32> = []
    private var recorded: [RecordedRequest] = []
    private var accepted = 0
    private var inFlight = 0
    private var peak = 0
    private var gateWaiting = 0
    private var gateOpenings = 0
    private var flakyHits: [String: Int] = [:]
    private var heldStoreReleased = false
    private var bodyBytesSent: [String: Int] = [:]

    /// Why the server could not start: the failing call and its errno.
    struct SocketError: Error { let call: String; let code: Int32 }

    /// Starts serving the files of `directory` (the fixtures folder) on a free loopback port.
    init(directory: String) throws {
        (listener, port) = try FaultServer.openListener()
        self.directory = directory
        // Weak, so that dropping the server (deinit) stops it; `acceptOnce` holds a
        // strong reference only for one bounded turn.
        let acceptor = Thread { [weak self] in
            while let server = self, server.acceptOnce() {}
        }
        acceptor.name = "FaultServer.accept"
        acceptor.start()
    }

    deinit {
        stop()
        // acceptOnce runs with a strong reference, so no thread is polling the
        // listener now and its number can be released safely.
        locked { closeListener() }
    }

    /// "http://127.0.0.1:PORT".
    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Stops accepting and ends every open connection, waking handlers that stall; idempotent.
    func stop() {
        locked {
            guard !stopped else { return }
            stopped = true
            // Shut down rather than close: each descriptor is closed by the thread that
            // polls it, so its number cannot be reused under a pending poll or accept.
            shutdown(listener, Int32(SHUT_RDWR))
            for fd in open { shutdown(fd, Int32(SHUT_RDWR)) }
            lock.broadcast()
        }
    }

    /// Every request whose head has been read, in arrival order.
    var requests: [RecordedRequest] { locked { recorded } }

    /// TCP connections accepted so far.
    var connectionCount: Int { locked { accepted } }

    /// The most requests ever being answered at the same moment.
    var maxInFlight: Int { locked { peak } }

    /// Body bytes handed to the socket for `path`'s `huge/` responses (with a
    /// small send buffer, about what the client took before it hung up).
    func bodyBytes(path: String) -> Int {
        locked { bodyBytesSent[path, default: 0] }
    }

    /// How many requests arrived for `path` (query ignored; absolute-form reduced to its path).
    func requestCount(path: String) -> Int {
        locked { recorded.filter { $0.path == path }.count }
    }

    // MARK: - Accepting

    /// One bounded turn of the accept loop; false once the server has stopped.
    private func acceptOnce() -> Bool {
        let running = locked { () -> Bool in
            if stopped { closeListener() }
            return !stopped
        }
        guard running else { return false }
        var pollee = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        guard poll(&pollee, 1, 250) > 0 else { return true }
        let fd = accept(listener, nil, nil)
        guard fd >= 0 else {
            // Includes the EINVAL that follows stop(); the next turn notices. The pause
            // keeps a persistent error (EMFILE) from spinning.
            usleep(10_000)
            return true
        }
        // The tests spawn imgcache; an inherited copy would keep the socket open past our close.
        // (Glibc's module does not export accept4, hence the separate call.)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        let serial = locked { () -> Int? in
            guard !stopped else { return nil }
            accepted += 1
            open.insert(fd)
            return accepted
        }
        guard let serial else { close(fd); return true }
        // A client that neither reads nor closes must not block a send forever.
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        Thread { self.handle(connection: fd, serial: serial) }.start()
        return true
    }

    /// Closes the listening socket once; call with `lock` held.
    private func closeListener() {
        if listenerOpen { close(listener); listenerOpen = false }
    }

    // MARK: - Connections

    /// Answers requests on one keep-alive connection until it ends.
    private func handle(connection fd: Int32, serial: Int) {
        defer {
            locked { _ = open.remove(fd) }
            close(fd)
        }
        var pending: [UInt8] = []
        while let head = readHead(fd, &pending) {
            guard let request = FaultServer.parse(head, connection: serial) else {
                _ = sendAll(fd, FaultServer.closingResponse(400)[...])
                return
            }
            // A store's write: its body is read and dropped (the routes answer by path alone).
            if request.method == "PUT", let length = request.header("Content-Length").flatMap(Int.init), length >= 0 {
                guard discardBody(fd, &pending, length: length) else { return }
            }
            begin(request)
            var ended = false
            let finish = {
                if !ended { ended = true; self.end() }
            }
            let keepAlive = answer(request, on: fd, finish: finish)
            finish()
            guard keepAlive else { return }
        }
    }

    /// Records an arriving request.
    private func begin(_ request: RecordedRequest) {
        locked {
            recorded.append(request)
            inFlight += 1
            peak = max(peak, inFlight)
        }
    }

    /// Marks a request as no longer in flight.
    private func end() {
        locked {
            inFlight -= 1
        }
    }

    /// Sends what the route asks for; true if the connection may carry another request.
    private func answer(_ request: RecordedRequest, on fd: Int32, finish: () -> Void) -> Bool {
        let takesWrites = ["/held-store/", "/slow-store/", "/slow-write-store/"].contains { request.path.hasPrefix($0) }
        guard request.method == "GET" || (request.method == "PUT" && takesWrites) else {
            // Any body would follow unread, so the connection cannot be reused.
            _ = sendAll(fd, FaultServer.closingResponse(405)[...])
            return false
        }
        switch route(request) {
        case let .full(status, type, body, extra):
            let bytes = FaultServer.head(status, FaultServer.fields(type, body.count, "keep-alive") + extra) + body
            // Finish before the last byte: once the client has the whole response it may
            // start its next request at once, which must not overlap this one in maxInFlight.
            guard sendAll(fd, bytes.dropLast()) else { return false }
            finish()
            return sendAll(fd, bytes.suffix(1))
        case let .half(body, type, cut):
            let bytes = FaultServer.head(200, FaultServer.fields(type, body.count, "keep-alive"))
                + body.prefix(body.count / 2)
            guard sendAll(fd, bytes[...]) else { return false }
            switch cut {
            case .stall:
                waitForClose(fd)
            case .close:
                break
            case .reset:
                // Linger 0 makes the close below send RST, so the client sees ECONNRESET.
                var abort = linger(l_onoff: 1, l_linger: 0)
                setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, socklen_t(MemoryLayout<linger>.size))
            }
            return false
        case .stall:
            waitForClose(fd)
            return false
        case .raw(let bytes):
            _ = sendAll(fd, bytes[...])
            return false
        case let .drip(body, type):
            // A slow link: the body in 30 pieces, 30 ms apart (for progress displays).
            guard sendAll(fd, FaultServer.head(200, FaultServer.fields(type, body.count, "close"))[...]) else { return false }
            let piece = max(1, (body.count + 29) / 30)
            var offset = 0
            while offset < body.count {
                guard sendAll(fd, body[offset..<min(body.count, offset + piece)]) else { return false }
                offset += piece
                usleep(30_000)
            }
            return false
        case let .slowDrip(body, type, seconds):
            guard sendAll(fd, FaultServer.head(200, FaultServer.fields(type, body.count, "close"))[...]) else { return false }
            let pieces = max(1, Int(seconds * 4))
            let piece = max(1, (body.count + pieces - 1) / pieces)
            var offset = 0
            while offset < body.count {
                usleep(250_000)
                guard sendAll(fd, body[offset..<min(body.count, offset + piece)]) else { return false }
                offset += piece
            }
            return false
        case let .huge(start, total, type):
            // A small send buffer, so that what was sent is about what the client read.
            var size: Int32 = 16_384
            setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            let head = FaultServer.head(200, FaultServer.fields(type, total, "close"))
            guard sendAll(fd, head[...]) else { return false }
            var chunk = start + [UInt8](repeating: 0x41, count: max(0, 65_536 - start.count))
            var sent = 0
            while sent < total {
                let piece = chunk.prefix(total - sent)
                guard sendAll(fd, piece) else { break }
                sent += piece.count
                locked { bodyBytesSent[request.path, default: 0] = sent }
                chunk = [UInt8](repeating: 0x41, count: 65_536)
            }
            return false
        case .endless(let start, let type):
            let head = FaultServer.head(200, [("Content-Type", type), ("Connection", "close")])
            guard sendAll(fd, (head + start)[...]) else { return false }
            let zeros = [UInt8](repeating: 0x20, count: 65_536)
            var sent = start.count
            while sent < 4 << 30, sendAll(fd, zeros[...]) { sent += zeros.count }
            return false
        }
    }

    // MARK: - Routes

    /// What a route asks the connection to do.
    private enum Reply {
        /// A complete response with Content-Length; the connection stays open.
        case full(status: Int, type: String, body: [UInt8], extra: [(String, String)])
        /// Headers promising all of `body`, half of it, then `cut`.
        case half(body: [UInt8], type: String, cut: Cut)
        /// No response at all.
        case stall
        /// A body without length that never ends.
        /// `start`, then spaces without end.
        case endless(start: [UInt8], type: String)
        /// These bytes exactly, then the connection closes (hostile responses).
        case raw([UInt8])
        /// A complete response whose body arrives slowly, then the connection closes.
        case drip(body: [UInt8], type: String)
        case slowDrip(body: [UInt8], type: String, seconds: Double)
        /// `start`, then filler, `total` bytes in all, announced; the connection closes.
        case huge(start: [UInt8], total: Int, type: String)
    }

    /// How a half-sent response ends.
    private enum Cut { case stall, close, reset }

    /// Picks the behaviour for a request by its path (absolute-form already reduced).
    private func route(_ request: RecordedRequest) -> Reply {
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        switch (parts.first ?? "", parts.count) {
        case ("image", 2):
            return serve(parts[1])
        case ("gate", 3):
            guard let count = Int(parts[1]), count > 0 else { break }
            waitAtGate(until: count)
            return serve(parts[2])
        case ("stall", 1):
            return .stall
        case ("stall-once", 2):
            // The first request of this path never gets an answer; later ones get the image.
            let hit = locked { () -> Int in
                flakyHits[request.path, default: 0] += 1
                return flakyHits[request.path, default: 0]
            }
            return hit == 1 ? .stall : serve(parts[1])
        case ("drip", 2):
            guard let (bytes, type) = file(parts[1]) else { break }
            return .drip(body: bytes, type: type)
        case ("slow-drip", 3):
            // A healthy but slow transfer: the body in pieces over SECONDS, a piece every 0.25 s.
            guard let seconds = Double(parts[1]), seconds > 0, seconds <= 30, let (bytes, type) = file(parts[2]) else { break }
            return .slowDrip(body: bytes, type: type, seconds: seconds)
        case ("delay", 3):
            // An origin that takes a while for each image (at most 2 s).
            guard let milliseconds = UInt32(parts[1]), milliseconds <= 2000 else { break }
            usleep(milliseconds * 1000)
            return serve(parts[2])
        case ("huge-store", _):
            // A store whose every object announces 400 MB (an object header, then filler).
            return .huge(start: Array("imgcache-object 1\n".utf8), total: 400 << 20, type: "application/octet-stream")
        case ("endless-store", _):
            // The same without a length: the object streams until the client hangs up.
            return .endless(start: Array("imgcache-object 1\n".utf8), type: "application/octet-stream")
        case ("slow-store", _) where parts.count > 2:
            // A store that has nothing and takes writes, each answer after MS milliseconds (at most 2 s).
            guard let milliseconds = UInt32(parts[1]), milliseconds <= 2000 else { break }
            usleep(milliseconds * 1000)
            return status(request.method == "PUT" ? 201 : 404)
        case ("slow-write-store", _) where parts.count > 2:
            // A store that has nothing, answers lookups at once, and takes MS milliseconds (at most 2 s) per write.
            guard let milliseconds = UInt32(parts[1]), milliseconds <= 2000 else { break }
            if request.method == "PUT" { usleep(milliseconds * 1000) }
            return status(request.method == "PUT" ? 201 : 404)
        case ("robots", 3):
            // The image, with X-Robots-Tag: VALUE (an opt-out of AI training, or another directive).
            return serve(parts[2], extra: [("X-Robots-Tag", parts[1].removingPercentEncoding ?? parts[1])])
        case ("retry-after", 3):
            // 503 with Retry-After: SECONDS for the first request of this path, then the image.
            let hit = locked { () -> Int in
                flakyHits[request.path, default: 0] += 1
                return flakyHits[request.path, default: 0]
            }
            guard hit == 1 else { return serve(parts[2]) }
            return .full(status: 503, type: "text/plain", body: Array("busy\n".utf8),
                         extra: [("Retry-After", parts[1].removingPercentEncoding ?? parts[1])])
        case ("garbage-store", _):
            // A store (or a misconfigured proxy in front of one) that answers every object with a web page.
            let page = "<!DOCTYPE html>\n<html><body><p>Welcome!</p></body></html>\n"
            return .full(status: 200, type: "text/html", body: Array(page.utf8), extra: [])
        case ("held-store", _):
            // A store that has nothing and takes writes, but holds each until the test releases them.
            guard request.method == "PUT" else { return status(404) }
            holdUntilReleased()
            return status(201)
        case ("stall-store", _):
            // A remote store that accepts connections and never answers.
            return .stall
        case ("stall-body", 2), ("truncated", 2), ("reset", 2):
            guard let (bytes, type) = file(parts[1]) else { break }
            let cut: Cut = parts[0] == "stall-body" ? .stall : parts[0] == "truncated" ? .close : .reset
            return .half(body: bytes, type: type, cut: cut)
        case ("endless", 1):
            return .endless(start: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], type: "image/png")
        case ("endless-html", 1):
            return .endless(start: Array("<!DOCTYPE html>\n<html><body>".utf8), type: "text/html")
        case ("huge", 2):
            // 30 MB that begin as a TIFF (recognised, not stored), or as nothing imgcache knows.
            let starts = ["tiff": [UInt8]([0x49, 0x49, 0x2A, 0x00]), "unknown": Array("PK\u{3}\u{4}some archive".utf8)]
            guard let start = starts[parts[1]] else { break }
            return .huge(start: start, total: 30 << 20, type: "image/tiff")
        case ("endless-bomb", 1):
            // bomb.png's header (50000x50000 pixels), then an endless body.
            guard let (bytes, _) = file("bomb.png") else { break }
            return .endless(start: bytes, type: "image/png")
        case ("flaky", 4):
            guard let failures = Int(parts[1]), let code = Int(parts[2]), (200...599).contains(code) else { break }
            let hit = locked { () -> Int in
                flakyHits[request.path, default: 0] += 1
                return flakyHits[request.path, default: 0]
            }
            return hit <= failures ? status(code) : serve(parts[3])
        case ("swap", 3):
            // An image replaced on the server: FIRST for the first request of this path, SECOND after.
            let hit = locked { () -> Int in
                flakyHits[request.path, default: 0] += 1
                return flakyHits[request.path, default: 0]
            }
            return serve(hit == 1 ? parts[1] : parts[2])
        case ("status", 2):
            guard let code = Int(parts[1]), (200...599).contains(code) else { break }
            return status(code)
        case ("set-cookie", 2):
            return serve(parts[1], extra: [("Set-Cookie", "session=s3cr3t; Path=/")])
        case ("need-cookie", 2):
            let cookies = request.headers.filter { $0.name.lowercased() == "cookie" }
            return cookies.contains { $0.value.contains("session=s3cr3t") } ? serve(parts[1]) : status(403)
        case ("login", 2):
            // A page that wants a login: an HTML form, with 200, to a request without the session cookie.
            let cookies = request.headers.filter { $0.name.lowercased() == "cookie" }
            if cookies.contains(where: { $0.value.contains("session=s3cr3t") }) { return serve(parts[1]) }
            let page = "<!DOCTYPE html>\n<html><body><form method=post><input name=user></form></body></html>\n"
            return .full(status: 200, type: "text/html", body: Array(page.utf8), extra: [])
        case ("fresh", 3):
            // Fresh for SECONDS (Cache-Control: max-age), with an ETag a conditional request is answered 304 for.
            guard let seconds = Int(parts[1]), let (bytes, type) = file(parts[2]) else { break }
            let tag = "\"fresh-\(parts[2])\""
            let fields = [("Cache-Control", "max-age=\(seconds)"), ("ETag", tag), ("Date", FaultServer.httpDate(Date()))]
            if request.header("If-None-Match") == tag { return .full(status: 304, type: type, body: [], extra: fields) }
            return .full(status: 200, type: type, body: bytes, extra: fields)
        case ("modified", 3):
            // Last modified DAYS ago, nothing else said of freshness: fresh for a tenth of that, by heuristic.
            guard let days = Double(parts[1]), let (bytes, type) = file(parts[2]) else { break }
            return .full(status: 200, type: type, body: bytes,
                         extra: [("Last-Modified", FaultServer.httpDate(Date(timeIntervalSinceNow: -days * 86_400))),
                                 ("Date", FaultServer.httpDate(Date()))])
        case ("signed", 2):
            // A signed URL: only the signature `fresh` is still valid.
            return request.target.contains("sig=fresh") ? serve(parts[1]) : status(403)
        case ("need-auth", 2):
            let expected = "Basic " + Data("user:secret".utf8).base64EncodedString()
            return request.header("Authorization") == expected ? serve(parts[1]) : status(401)
        case ("redirect", 3):
            guard let hops = Int(parts[1]), hops >= 0 else { break }
            if hops == 0 { return serve(parts[2]) }
            return .full(status: 302, type: "text/plain", body: Array("Found\n".utf8),
                         extra: [("Location", "/redirect/\(hops - 1)/\(parts[2])")])
        case ("gzip", 2):
            // The image sent gzip-encoded, as a server compressing everything does.
            guard let (bytes, type) = file(parts[1]) else { break }
            return .full(status: 200, type: type, body: FaultServer.gzip(bytes), extra: [("Content-Encoding", "gzip")])
        case ("huge-headers", 2), ("header-flood", 2), ("length-long", 2), ("length-short", 2), ("gzip-bomb", 2),
             ("gzip-image-bomb", 2), ("bad-chunked", 2):
            guard let (bytes, type) = file(parts[1]) else { break }
            return .raw(FaultServer.hostile(parts[0], body: bytes, type: type))
        case ("not-http", 1):
            // Another protocol's server on the port: it answers, but not in HTTP.
            return .raw(Array("SSH-2.0-OpenSSH_9.2\r\nProtocol mismatch.\n".utf8))
        case ("html", 1):
            let page = "<!DOCTYPE html>\n<html><head><title>imgcache test</title></head>"
                + "<body><p>This page is not an image.</p></body></html>\n"
            return .full(status: 200, type: "text/html", body: Array(page.utf8), extra: [])
        default:
            break
        }
        return status(404)
    }

    /// Holds the caller until `count` gate requests wait together, then releases
    /// that group at once (or gives up after 5 s). Counting waiters rather than
    /// requests in flight keeps groups whole: a request arriving while the last
    /// group is still being answered waits for a group of its own.
    private func waitAtGate(until count: Int) {
        lock.lock()
        defer { lock.unlock() }
        gateWaiting += 1
        if gateWaiting >= count {
            gateWaiting = 0
            gateOpenings += 1
            lock.broadcast()
            return
        }
        let opening = gateOpenings
        let deadline = Date(timeIntervalSinceNow: 5)
        while gateOpenings == opening, !stopped, lock.wait(until: deadline) {}
        if gateOpenings == opening { gateWaiting -= 1 }
    }

    /// Holds a `held-store` write until `releaseHeldStore()` (or for at most 30 s).
    private func holdUntilReleased() {
        lock.lock()
        defer { lock.unlock() }
        let deadline = Date(timeIntervalSinceNow: 30)
        while !heldStoreReleased, !stopped, lock.wait(until: deadline) {}
    }

    /// Lets the `held-store` writes held so far, and all later ones, be answered.
    func releaseHeldStore() {
        locked {
            heldStoreReleased = true
            lock.broadcast()
        }
    }

    /// A 200 with the bytes of fixture `name`, or a 404 if there is no such file.
    private func serve(_ name: String, extra: [(String, String)] = []) -> Reply {
        guard let (bytes, type) = file(name) else { return status(404) }
        return .full(status: 200, type: type, body: bytes, extra: extra)
    }

    /// `status` with a short text body.
    private func status(_ code: Int) -> Reply {
        // 204 and 304 never have a body: a client would take it for the next response.
        let body = code == 204 || code == 304 ? [] : Array("\(code) \(FaultServer.reason(code))\n".utf8)
        let extra = code == 401 ? [("WWW-Authenticate", "Basic realm=\"imgcache-test\"")] : []
        return .full(status: code, type: "text/plain", body: body, extra: extra)
    }

    /// The bytes and Content-Type of fixture `name`, if it exists.
    private func file(_ name: String) -> (bytes: [UInt8], type: String)? {
        guard !name.isEmpty, name != ".", name != "..",
              let data = FileManager.default.contents(atPath: directory + "/" + name) else { return nil }
        let types = ["jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png", "gif": "image/gif",
                     "webp": "image/webp", "html": "text/html"]
        let type = types[URL(fileURLWithPath: name).pathExtension.lowercased()] ?? "application/octet-stream"
        return ([UInt8](data), type)
    }

    func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }
}
