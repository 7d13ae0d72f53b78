import Foundation

/// nginx serving a folder on a free 127.0.0.1 port, through scripts/nginx-serve.sh
/// (the same generated config `make run` uses). Stopped when released.
final class NginxServer {
    let port: Int
    private let work: TemporaryDirectory
    private var process: Process?

    init(serving root: URL = Paths.fixtures) throws {
        work = try TemporaryDirectory("imgcache-nginx")
        var lastError = "nginx did not start"
        // A port found free can be taken before nginx binds it: try a few.
        for _ in 0..<5 {
            let candidate = try NginxServer.freePort()
            let process = Process()
            process.executableURL = Paths.repository.appendingPathComponent("scripts/nginx-serve.sh")
            process.arguments = [root.path, work.appending("nginx"), String(candidate)]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            if NginxServer.waitUntilListening(port: candidate, while: process) {
                self.port = candidate
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

    /// Lines of the access log: "URI STATUS USER-AGENT|ACCEPT".
    var requests: [String] {
        let text = (try? String(contentsOfFile: work.appending("nginx/access.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }

    /// How many requests reached the server for `path`.
    func requestCount(_ path: String) -> Int {
        requests.filter { $0.hasPrefix("/" + path + " ") }.count
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
    private static func waitUntilListening(port: Int, while process: Process) -> Bool {
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
