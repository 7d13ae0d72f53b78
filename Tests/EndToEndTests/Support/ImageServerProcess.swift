import Foundation

/// `imgcache serve` on a free 127.0.0.1 port (`--listen 127.0.0.1:0`, the port read from what it
/// says as it starts), over the cache root a test gives, stopped (SIGKILL) when released.
final class ImageServerProcess {
    let process: Process
    let port: Int
    let outputs: TemporaryDirectory

    init(_ arguments: [String], cacheRoot: String, home: String, environment: [String: String] = [:],
         listen: [String] = ["--listen", "127.0.0.1:0"]) throws {
        outputs = try TemporaryDirectory("imgcache-serve")
        process = try ImgCacheProcess.startCapturing(["--cache-dir", cacheRoot, "serve"] + listen + arguments,
                                                     environment: environment, home: home, outputs: outputs)
        var found: Int?
        // Bounded: 10 s for the server to say where it listens.
        for _ in 0..<1000 where found == nil && process.isRunning {
            let text = (try? String(contentsOfFile: outputs.appending("stderr"), encoding: .utf8)) ?? ""
            if let range = text.range(of: "listening on http://127.0.0.1:") {
                found = Int(text[range.upperBound...].prefix { $0.isNumber })
            } else if text.contains("listening on unix:") {
                found = 0
            } else {
                usleep(10_000)
            }
        }
        guard let found else {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            throw StartFailure(standardError: (try? String(contentsOfFile: outputs.appending("stderr"), encoding: .utf8)) ?? "")
        }
        port = found
    }

    struct StartFailure: Error { let standardError: String }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// What it wrote on stderr so far.
    var standardError: String { (try? String(contentsOfFile: outputs.appending("stderr"), encoding: .utf8)) ?? "" }
    /// The access log (stdout) so far.
    var accessLog: String { (try? String(contentsOfFile: outputs.appending("stdout"), encoding: .utf8)) ?? "" }

    /// Sends `signal` and waits (at most `limit` seconds) for the exit; its status, nil if it did not end.
    func stop(with signal: Int32 = SIGTERM, limit: Double = 30) -> Int32? {
        kill(process.processIdentifier, signal)
        let deadline = Date().addingTimeInterval(limit)
        while process.isRunning, Date() < deadline { usleep(10_000) }
        guard !process.isRunning else { return nil }
        return process.terminationStatus
    }

    /// GET (or another method) of `path`, on a connection of its own.
    func request(_ path: String, method: String = "GET", headers: [(String, String)] = []) throws -> HTTPReply {
        try HTTPReply.exchange(port: port, raw: HTTPReply.requestText(path, method: method, headers: headers))
    }
}

/// An HTTP/1.1 answer read off a socket: status, headers (names in lower case) and body.
struct HTTPReply {
    let status: Int
    let headers: [String: String]
    let body: Data

    func header(_ name: String) -> String? { headers[name.lowercased()] }

    static func requestText(_ path: String, method: String = "GET", headers: [(String, String)] = []) -> String {
        var text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        return text + "\r\n"
    }

    /// A connected socket to 127.0.0.1:`port` (or the unix socket `path`), reads bounded by 30 s.
    static func connect(port: Int, unixPath: String? = nil) throws -> Int32 {
        let descriptor: Int32
        if let unixPath {
            descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                for (index, byte) in unixPath.utf8.prefix(raw.count - 1).enumerated() { raw[index] = byte }
            }
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard result == 0 else { close(descriptor); throw Failure.connect(errno) }
        } else {
            descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard result == 0 else { close(descriptor); throw Failure.connect(errno) }
        }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return descriptor
    }

    enum Failure: Error { case connect(Int32), malformed(String) }

    static func send(_ descriptor: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { return }
            offset += sent
        }
    }

    /// Everything the peer sends until it closes (or 30 s pass without a byte).
    static func readAll(_ descriptor: Int32) -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count <= 0 { break }
            data.append(contentsOf: buffer[..<count])
        }
        return data
    }

    static func exchange(port: Int, raw: String, unixPath: String? = nil) throws -> HTTPReply {
        let descriptor = try connect(port: port, unixPath: unixPath)
        defer { close(descriptor) }
        send(descriptor, raw)
        return try parse(readAll(descriptor))
    }

    static func parse(_ data: Data) throws -> HTTPReply {
        guard let end = data.range(of: Data("\r\n\r\n".utf8)) else { throw Failure.malformed(String(decoding: data.prefix(200), as: UTF8.self)) }
        let head = String(decoding: data[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = head[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { throw Failure.malformed(head[0]) }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return HTTPReply(status: status, headers: headers, body: Data(data[end.upperBound...]))
    }
}

extension Data {
    /// Whether the last bytes are `suffix`'s.
    func ends(with suffix: Data) -> Bool { count >= suffix.count && self[(endIndex - suffix.count)...] == suffix }
}
