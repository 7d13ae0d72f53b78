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
    private var stopped = false
    private var listenerOpen = true
    private var open: Set<Int32> = []
    private var recorded: [RecordedRequest] = []
    private var accepted = 0
    private var inFlight = 0
    private var peak = 0
    private var gateWaiting = 0
    private var gateOpenings = 0
    private var flakyHits: [String: Int] = [:]

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
        guard request.method == "GET" else {
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
        case ("drip", 2):
            guard let (bytes, type) = file(parts[1]) else { break }
            return .drip(body: bytes, type: type)
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
        case ("status", 2):
            guard let code = Int(parts[1]), (200...599).contains(code) else { break }
            return status(code)
        case ("set-cookie", 2):
            return serve(parts[1], extra: [("Set-Cookie", "session=s3cr3t; Path=/")])
        case ("need-cookie", 2):
            let cookies = request.headers.filter { $0.name.lowercased() == "cookie" }
            return cookies.contains { $0.value.contains("session=s3cr3t") } ? serve(parts[1]) : status(403)
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
        case ("huge-headers", 2), ("header-flood", 2), ("length-long", 2), ("length-short", 2), ("gzip-bomb", 2),
             ("bad-chunked", 2):
            guard let (bytes, type) = file(parts[1]) else { break }
            return .raw(FaultServer.hostile(parts[0], body: bytes, type: type))
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

    // MARK: - Wire

    /// Reads up to the blank line ending a request head, keeping any bytes after it in `pending`.
    private func readHead(_ fd: Int32, _ pending: inout [UInt8]) -> [UInt8]? {
        let limit = 65_536
        let deadline = Date(timeIntervalSinceNow: 30)
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            if pending.count >= 4, let end = (0...(pending.count - 4)).first(where: {
                pending[$0] == 13 && pending[$0 + 1] == 10 && pending[$0 + 2] == 13 && pending[$0 + 3] == 10
            }) {
                guard end <= limit else { return nil }
                let head = Array(pending[..<end])
                pending.removeFirst(end + 4)
                return head
            }
            guard pending.count <= limit, waitReadable(fd, until: deadline) else { return nil }
            let count = recv(fd, &chunk, chunk.count, 0)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return nil }
            pending += chunk[..<count]
        }
    }

    /// Discards input until the client closes, stop() runs, or 60 s pass.
    private func waitForClose(_ fd: Int32) {
        let deadline = Date(timeIntervalSinceNow: 60)
        var scratch = [UInt8](repeating: 0, count: 4096)
        while waitReadable(fd, until: deadline) {
            let count = recv(fd, &scratch, scratch.count, 0)
            if count == 0 || (count < 0 && errno != EINTR) { return }
        }
    }

    /// True once `fd` has input, end of file or an error to report; false at the deadline or on stop().
    private func waitReadable(_ fd: Int32, until deadline: Date) -> Bool {
        // Short slices so that `stopped` is noticed even if no wake-up reaches the socket.
        while !locked({ stopped }) {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { return false }
            var pollee = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pollee, 1, Int32(min(remaining, 0.5) * 1000) + 1)
            if ready > 0 { return true }
            if ready < 0, errno != EINTR { return false }
        }
        return false
    }

    /// Sends all of `bytes`, retrying partial sends; false if the connection failed.
    private func sendAll(_ fd: Int32, _ bytes: ArraySlice<UInt8>) -> Bool {
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            // MSG_NOSIGNAL: a client hanging up must give EPIPE here, not kill the test runner.
            let sent = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent > 0 { offset += sent } else if sent == 0 || errno != EINTR { return false }
        }
        return true
    }

    /// A complete response after which the server closes the connection.
    private static func closingResponse(_ code: Int) -> [UInt8] {
        let body = Array("\(code) \(reason(code))\n".utf8)
        return head(code, fields("text/plain", body.count, "close")) + body
    }

    /// The framing fields every response with a length carries.
    private static func fields(_ type: String, _ length: Int, _ connection: String) -> [(String, String)] {
        [("Content-Type", type), ("Content-Length", String(length)), ("Connection", connection)]
    }

    /// A response that breaks HTTP's rules the way a hostile server would.
    private static func hostile(_ kind: String, body: [UInt8], type: String) -> [UInt8] {
        let closing = [("Content-Type", type), ("Connection", "close")]
        switch kind {
        case "huge-headers":
            // One header line of 300 KB, over libcurl's limit for a header.
            return head(200, closing + [("Content-Length", String(body.count)), ("X-Huge", String(repeating: "h", count: 300_000))]) + body
        case "header-flood":
            // 30,000 short header lines.
            return head(200, closing + [("Content-Length", String(body.count))] + (0..<30_000).map { ("X-\($0)", "f") }) + body
        case "length-long":
            // Promises 1000 bytes more than it sends, then closes.
            return head(200, closing + [("Content-Length", String(body.count + 1000))]) + body
        case "length-short":
            // Promises half and sends everything: the rest must not become part of the image.
            return head(200, closing + [("Content-Length", String(body.count / 2))]) + body
        case "gzip-bomb":
            // 10 MB of zeros gzipped to a few KB, announced as Content-Encoding: gzip.
            let zeros = [UInt8](repeating: 0, count: 10 << 20)
            return head(200, closing + [("Content-Encoding", "gzip"), ("Content-Length", String(gzip(zeros).count))]) + gzip(zeros)
        default:
            // "bad-chunked": a chunk size that is not hexadecimal.
            return head(200, closing + [("Transfer-Encoding", "chunked")]) + Array("zz\r\nnot a chunk\r\n0\r\n\r\n".utf8)
        }
    }

    /// `bytes` gzipped by the gzip command.
    private static func gzip(_ bytes: [UInt8]) -> [UInt8] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/gzip")
        process.arguments = ["-c", "-9"]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        guard (try? process.run()) != nil else { return [] }
        let writer = Thread { input.fileHandleForWriting.write(Data(bytes)); try? input.fileHandleForWriting.close() }
        writer.start()
        let result = [UInt8](output.fileHandleForReading.readDataToEndOfFile())
        process.waitUntilExit()
        return result
    }

    /// A status line and header fields, through the blank line.
    private static func head(_ status: Int, _ fields: [(String, String)]) -> [UInt8] {
        var text = "HTTP/1.1 \(status) \(reason(status))\r\n"
        for (name, value) in fields { text += "\(name): \(value)\r\n" }
        return Array((text + "\r\n").utf8)
    }

    /// The reason phrase for `status`.
    private static func reason(_ status: Int) -> String {
        let phrases = [200: "OK", 302: "Found", 304: "Not Modified", 401: "Unauthorized", 403: "Forbidden",
                       404: "Not Found", 408: "Request Timeout", 410: "Gone", 429: "Too Many Requests",
                       500: "Internal Server Error", 503: "Service Unavailable"]
        return phrases[status] ?? "Status"
    }

    /// Parses a request head (without its blank line); nil if the request line is malformed.
    private static func parse(_ head: [UInt8], connection: Int) -> RecordedRequest? {
        let lines = String(decoding: head, as: UTF8.self).components(separatedBy: "\r\n")
        let words = lines[0].split(separator: " ")
        guard words.count == 3, words[2].hasPrefix("HTTP/") else { return nil }
        let target = String(words[1])
        var path = Substring(target)
        if !path.hasPrefix("/"), let scheme = path.range(of: "://") {
            let afterScheme = path[scheme.upperBound...]
            path = afterScheme.firstIndex(of: "/").map { afterScheme[$0...] } ?? "/"
        }
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append((name: line[..<colon].trimmingCharacters(in: .whitespaces),
                            value: line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        return RecordedRequest(method: String(words[0]), target: target,
                               path: String(path.prefix { $0 != "?" && $0 != "#" }),
                               headers: headers, connection: connection)
    }

    /// Binds 127.0.0.1 on a kernel-chosen port and listens.
    private static func openListener() throws -> (fd: Int32, port: Int) {
        // CLOEXEC for the same reason as accepted sockets: spawned clients must not inherit it.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SocketError(call: "socket", code: errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let failed = withUnsafeMutablePointer(to: &address) { pointer -> String? in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw -> String? in
                if bind(fd, raw, length) != 0 { return "bind" }
                if listen(fd, 128) != 0 { return "listen" }
                if getsockname(fd, raw, &length) != 0 { return "getsockname" }
                return nil
            }
        }
        if let failed {
            let code = errno
            close(fd)
            throw SocketError(call: failed, code: code)
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// Runs `body` holding `lock`.
    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }
}
