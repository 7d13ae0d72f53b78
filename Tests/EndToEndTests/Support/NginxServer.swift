import Foundation

/// nginx serving a folder on a free 127.0.0.1 port, through scripts/nginx-serve.sh
/// (the same generated config `make run` uses). Stopped when released.
final class NginxServer {
    let port: Int
    /// The HTTPS (HTTP/2) port, when started with `tls: true`.
    let tlsPort: Int?
    private let work: TemporaryDirectory
    private var process: Process?

    /// With `tls`, also serves HTTPS with HTTP/2 and a self-signed certificate for 127.0.0.1.
    init(serving root: URL = Paths.fixtures, tls: Bool = false) throws {
        work = try TemporaryDirectory("imgcache-nginx")
        try FileManager.default.createDirectory(atPath: work.appending("nginx"), withIntermediateDirectories: true)
        if tls { try NginxServer.makeCertificate(in: work.appending("nginx")) }
        var lastError = "nginx did not start"
        // A port found free can be taken before nginx binds it: try a few.
        for _ in 0..<5 {
            let candidate = try NginxServer.freePort()
            let tlsCandidate = tls ? try NginxServer.freePort() : nil
            let process = Process()
            process.executableURL = Paths.repository.appendingPathComponent("scripts/nginx-serve.sh")
            process.arguments = [root.path, work.appending("nginx"), String(candidate)] + (tlsCandidate.map { [String($0)] } ?? [])
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            if NginxServer.waitUntilListening(port: candidate, while: process),
               tlsCandidate.map({ NginxServer.waitUntilListening(port: $0, while: process) }) ?? true {
                self.port = candidate
                self.tlsPort = tlsCandidate
                self.process = process
                return
            }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            lastError = (try? String(contentsOfFile: work.appending("nginx/error.log"), encoding: .utf8)) ?? lastError
        }
        throw ServerError.didNotStart(lastError)
    }

    enum ServerError: Error { case didNotStart(String) }

    /// `http://127.0.0.1:PORT/PATH`.
    func url(_ path: String) -> String { "http://127.0.0.1:\(port)/\(path)" }

    /// `https://127.0.0.1:TLSPORT/PATH`.
    func tlsURL(_ path: String) -> String { "https://127.0.0.1:\(tlsPort ?? 0)/\(path)" }

    /// Where the WebDAV store at `/store/` keeps its files.
    var storeDirectory: String { work.appending("nginx/dav/store") }

    /// The certificate that signs the HTTPS port.
    var certificatePath: String { work.appending("nginx/tls.crt") }

    /// The access log, one entry per request, oldest first.
    var requests: [AccessLogEntry] {
        let text = (try? String(contentsOfFile: work.appending("nginx/access.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { AccessLogEntry(String($0)) }
    }

    /// The access log once it holds at least `count` requests: nginx writes a
    /// request's line just after its response, so the last line may trail the
    /// client by a moment. Waits 5 s at the most.
    func requests(atLeast count: Int) -> [AccessLogEntry] {
        for _ in 0..<5000 {
            let seen = requests
            if seen.count >= count { return seen }
            usleep(1000)
        }
        return requests
    }

    /// How many requests reached the server for `path`.
    func requestCount(_ path: String) -> Int {
        requests.filter { $0.uri == "/" + path }.count
    }

    /// A self-signed certificate for 127.0.0.1, made by the openssl command.
    private static func makeCertificate(in directory: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
                             "-addext", "subjectAltName=IP:127.0.0.1",
                             "-keyout", directory + "/tls.key", "-out", directory + "/tls.crt"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw ServerError.didNotStart("openssl could not make a certificate") }
    }

    func stop() {
        guard let process else { return }
        // SIGKILL, not SIGTERM: Foundation starts children with the test runner's
        // blocked-signal mask, and single-process nginx never unblocks it. Nothing
        // is lost: nginx writes its access log unbuffered.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        self.process = nil
    }

    deinit { stop() }

    static func freePort() throws -> Int {
        let socketDescriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socketDescriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Int32 in
                guard bind(socketDescriptor, pointer, length) == 0 else { return -1 }
                return getsockname(socketDescriptor, pointer, &length)
            }
        }
        guard bound == 0 else { throw ServerError.didNotStart("no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Polls for a listener, at most 10 s; false if nginx exits first.
    static func waitUntilListening(port: Int, while process: Process) -> Bool {
        for _ in 0..<1000 {
            if !process.isRunning { return false }
            if canConnect(port: port) { return true }
            usleep(10_000)
        }
        return false
    }

    static func canConnect(port: Int) -> Bool {
        let socketDescriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socketDescriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socketDescriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}

/// One access-log line of scripts/nginx-serve.sh's format.
struct AccessLogEntry {
    let uri: String
    let status: Int
    /// The TCP connection's serial number.
    let connection: Int
    /// "HTTP/1.1" or "HTTP/2.0".
    let protocolVersion: String
    let userAgent: String
    let accept: String
    let ifNoneMatch: String

    init?(_ line: String) {
        let fields = line.split(separator: " ", maxSplits: 4, omittingEmptySubsequences: false)
        guard fields.count == 5, let status = Int(fields[1]), let connection = Int(fields[2]) else { return nil }
        let headers = fields[4].split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        guard headers.count == 3 else { return nil }
        uri = String(fields[0])
        self.status = status
        self.connection = connection
        protocolVersion = String(fields[3])
        userAgent = headers[0]
        accept = headers[1]
        ifNoneMatch = headers[2]
    }
}
