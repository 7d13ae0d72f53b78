import Foundation

/// `imgcache --json prefetch -` (or other `arguments` reading standard input)
/// fed through a pipe, its lines read as they come: for tests of what happens
/// while the list is still open. A watchdog
/// kills a run that hangs, so reads end instead of blocking the suite.
final class StreamingPrefetch {
    let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let watchdog: DispatchWorkItem
    /// Everything read from stdout so far.
    private(set) var received = Data()

    /// `errorFile`: where standard error goes (discarded when nil).
    init(cacheRoot: String, home: String, arguments: [String] = ["--json", "prefetch", "-"],
         environment: [String: String] = [:], errorFile: String? = nil) throws {
        process.executableURL = URL(fileURLWithPath: Paths.binary)
        process.arguments = ["--cache-dir", cacheRoot] + arguments
        process.environment = ["PATH": "/usr/bin:/bin", "HOME": home].merging(environment) { $1 }
        process.standardInput = input
        process.standardOutput = output
        if let errorFile {
            FileManager.default.createFile(atPath: errorFile, contents: nil)
            process.standardError = FileHandle(forWritingAtPath: errorFile)
        } else {
            process.standardError = FileHandle.nullDevice
        }
        try process.run()
        let running = process
        watchdog = DispatchWorkItem { if running.isRunning { kill(running.processIdentifier, SIGKILL) } }
        DispatchQueue.global().asyncAfter(deadline: .now() + 20, execute: watchdog)
    }

    deinit { watchdog.cancel() }

    /// Writes `urls` to the list, one per line.
    func send(_ urls: [String]) {
        input.fileHandleForWriting.write(Data(urls.map { $0 + "\n" }.joined().utf8))
    }

    /// Waits for the next complete line of output; nil if the output ended first.
    func firstLine() -> String? {
        while !received.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { return nil }
            received.append(chunk)
        }
        return String(decoding: received.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
    }

    /// Closes the list, reads the rest and waits for the exit status.
    func finish() throws -> (status: Int32, lines: [String]) {
        try input.fileHandleForWriting.close()
        received.append(output.fileHandleForReading.readDataToEndOfFile())
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: received, as: UTF8.self).split(separator: "\n").map(String.init))
    }
}
