import Foundation

/// redis-server (Debian's) on a free 127.0.0.1 port and a unix socket, no
/// persistence, in a folder of its own; stopped when released or by `kill()`.
final class RedisServer {
    let port: Int
    let password: String?
    private let work: TemporaryDirectory
    private var process: Process?

    /// The unix socket it also listens on.
    var socketPath: String { work.appending("redis.sock") }
    /// `redis://127.0.0.1:PORT`.
    var url: String { "redis://127.0.0.1:\(port)" }

    /// `extra`: more `redis-server` arguments (`--maxmemory 1mb` and so on).
    init(password: String? = nil, extra: [String] = []) throws {
        work = try TemporaryDirectory("imgcache-redis")
        self.password = password
        var lastError = "redis-server did not start"
        for _ in 0..<5 {
            let candidate = try NginxServer.freePort()
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/redis-server")
            process.arguments = ["--port", String(candidate), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                                 "--dir", work.path, "--unixsocket", work.appending("redis.sock"), "--unixsocketperm", "700",
                                 "--logfile", work.appending("redis.log")]
                + (password.map { ["--requirepass", $0] } ?? []) + extra
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            if RedisServer.waitUntilListening(port: candidate, socket: work.appending("redis.sock"), while: process) {
                port = candidate
                self.process = process
                return
            }
            Foundation.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            lastError = (try? String(contentsOfFile: work.appending("redis.log"), encoding: .utf8)) ?? lastError
        }
        throw NginxServer.ServerError.didNotStart(lastError)
    }

    /// Runs `redis-cli` with `arguments` against this server; its output, trimmed.
    @discardableResult
    func command(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/redis-cli")
        process.arguments = ["-p", String(port), "--no-auth-warning"] + (password.map { ["-a", $0] } ?? []) + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The keys matching `pattern`.
    func keys(_ pattern: String = "*") throws -> [String] {
        try command(["--raw", "keys", pattern]).split(separator: "\n").map(String.init).sorted()
    }

    /// The raw value of `key`.
    func value(_ key: String) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/redis-cli")
        process.arguments = ["-p", String(port), "--no-auth-warning"] + (password.map { ["-a", $0] } ?? []) + ["--raw", "get", key]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        // --raw ends the value with a newline of its own.
        return data.last == 0x0A ? data.dropLast() : data
    }

    /// Stops the server at once, as a crash would.
    func kill() {
        guard let process else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        self.process = nil
    }

    deinit { kill() }

    private static func waitUntilListening(port: Int, socket: String, while process: Process) -> Bool {
        for _ in 0..<1000 {
            if !process.isRunning { return false }
            if NginxServer.canConnect(port: port), FileManager.default.fileExists(atPath: socket) { return true }
            usleep(10_000)
        }
        return false
    }
}
