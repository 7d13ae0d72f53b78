import Foundation
import Glibc

/// The fault server's HTTP/1.1 on the wire: reading a request head, writing
/// responses (plain, closing, gzip, deliberately malformed) and the listener.
extension FaultServer {

    /// Reads up to the blank line ending a request head, keeping any bytes after it in `pending`.
    func readHead(_ fd: Int32, _ pending: inout [UInt8]) -> [UInt8]? {
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

    /// Reads and drops a request body of `length` bytes (some may already be in
    /// `pending`); false when the client stops sending it within 30 s.
    func discardBody(_ fd: Int32, _ pending: inout [UInt8], length: Int) -> Bool {
        var left = length
        let taken = min(left, pending.count)
        pending.removeFirst(taken)
        left -= taken
        let deadline = Date(timeIntervalSinceNow: 30)
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while left > 0 {
            guard waitReadable(fd, until: deadline) else { return false }
            let count = recv(fd, &chunk, min(chunk.count, left), 0)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return false }
            left -= count
        }
        return true
    }

    /// Discards input until the client closes, stop() runs, or 60 s pass.
    func waitForClose(_ fd: Int32) {
        let deadline = Date(timeIntervalSinceNow: 60)
        var scratch = [UInt8](repeating: 0, count: 4096)
        while waitReadable(fd, until: deadline) {
            let count = recv(fd, &scratch, scratch.count, 0)
            if count == 0 || (count < 0 && errno != EINTR) { return }
        }
    }

    /// True once `fd` has input, end of file or an error to report; false at the deadline or on stop().
    func waitReadable(_ fd: Int32, until deadline: Date) -> Bool {
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
    func sendAll(_ fd: Int32, _ bytes: ArraySlice<UInt8>) -> Bool {
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            // MSG_NOSIGNAL: a client hanging up must give EPIPE here, not kill the test runner.
            let sent = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent > 0 { offset += sent } else if sent == 0 || errno != EINTR { return false }
        }
        return true
    }

    /// A complete response after which the server closes the connection.
    static func closingResponse(_ code: Int) -> [UInt8] {
        let body = Array("\(code) \(reason(code))\n".utf8)
        return head(code, fields("text/plain", body.count, "close")) + body
    }

    /// The framing fields every response with a length carries.
    static func fields(_ type: String, _ length: Int, _ connection: String) -> [(String, String)] {
        [("Content-Type", type), ("Content-Length", String(length)), ("Connection", connection)]
    }

    /// A response that breaks HTTP's rules the way a hostile server would.
    static func hostile(_ kind: String, body: [UInt8], type: String) -> [UInt8] {
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
        case "gzip-image-bomb":
            // An image's header (signature and size, which pass the first checks), then
            // 20 MB of zeros, gzipped to some 20 KB.
            let bomb = FaultServer.gzip(Array(body.prefix(33)) + [UInt8](repeating: 0, count: 20 << 20))
            return head(200, closing + [("Content-Encoding", "gzip"), ("Content-Length", String(bomb.count))]) + bomb
        default:
            // "bad-chunked": a chunk size that is not hexadecimal.
            return head(200, closing + [("Transfer-Encoding", "chunked")]) + Array("zz\r\nnot a chunk\r\n0\r\n\r\n".utf8)
        }
    }

    /// `bytes` gzipped by the gzip command.
    static func gzip(_ bytes: [UInt8]) -> [UInt8] {
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
    static func head(_ status: Int, _ fields: [(String, String)]) -> [UInt8] {
        var text = "HTTP/1.1 \(status) \(reason(status))\r\n"
        for (name, value) in fields { text += "\(name): \(value)\r\n" }
        return Array((text + "\r\n").utf8)
    }

    /// `date` as an HTTP date (IMF-fixdate).
    static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }

    /// The reason phrase for `status`.
    static func reason(_ status: Int) -> String {
        let phrases = [200: "OK", 302: "Found", 304: "Not Modified", 401: "Unauthorized", 403: "Forbidden",
                       404: "Not Found", 408: "Request Timeout", 410: "Gone", 429: "Too Many Requests",
                       500: "Internal Server Error", 503: "Service Unavailable"]
        return phrases[status] ?? "Status"
    }

    /// Parses a request head (without its blank line); nil if the request line is malformed.
    static func parse(_ head: [UInt8], connection: Int) -> RecordedRequest? {
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
    static func openListener() throws -> (fd: Int32, port: Int) {
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
}
