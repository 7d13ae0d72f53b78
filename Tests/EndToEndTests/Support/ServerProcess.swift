import Foundation

/// Starting a test server on a free loopback port: the port is chosen, the
/// server started and waited for until it listens (bounded), a few times over
/// when another process took the port meanwhile.
enum ServerProcess {
    /// The running server and its port; nil when none listened after `attempts` tries.
    static func start(attempts: Int = 3, environment: [String: String]? = nil,
                      _ arguments: (Int) -> [String]) throws -> (process: Process, port: Int)? {
        for _ in 0..<attempts {
            let candidate = try NginxServer.freePort()
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = arguments(candidate)
            if let environment { process.environment = environment }
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            for _ in 0..<3000 where process.isRunning {
                if NginxServer.canConnect(port: candidate) { return (process, candidate) }
                usleep(10_000)
            }
            Foundation.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        return nil
    }
}
