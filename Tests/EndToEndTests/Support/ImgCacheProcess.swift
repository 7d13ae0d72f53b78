import Foundation

/// What one run of the imgcache binary did.
struct RunResult {
    let status: Int32
    let standardOutput: Data
    let standardError: String

    var output: String { String(decoding: standardOutput, as: UTF8.self) }
    /// Non-empty lines of stdout.
    var lines: [String] { output.split(separator: "\n").map(String.init) }
    /// Non-empty lines of stderr.
    var errorLines: [String] { standardError.split(separator: "\n").map(String.init) }

    /// Each stdout line parsed as a JSON object.
    func jsonLines() throws -> [[String: Any]] {
        try lines.map { line in
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                throw CocoaError(.coderReadCorrupt)
            }
            return object
        }
    }
}

/// Runs the built imgcache binary as a subprocess, with a controlled environment.
enum ImgCacheProcess {
    /// Runs `imgcache ARGUMENTS`. The environment holds only PATH, HOME (a test
    /// folder, so the user's real cache is never touched) and `environment`.
    static func run(_ arguments: [String], environment: [String: String] = [:], home: String,
                    workingDirectory: String? = nil) throws -> RunResult {
        let outputs = try TemporaryDirectory("imgcache-run")
        let stdoutPath = outputs.appending("stdout"), stderrPath = outputs.appending("stderr")
        FileManager.default.createFile(atPath: stdoutPath, contents: nil)
        FileManager.default.createFile(atPath: stderrPath, contents: nil)
        let process = configured(arguments, environment: environment, home: home)
        if let workingDirectory { process.currentDirectoryURL = URL(fileURLWithPath: workingDirectory) }
        process.standardOutput = FileHandle(forWritingAtPath: stdoutPath)
        process.standardError = FileHandle(forWritingAtPath: stderrPath)
        try process.run()
        process.waitUntilExit()
        return RunResult(
            status: process.terminationStatus,
            standardOutput: try Data(contentsOf: URL(fileURLWithPath: stdoutPath)),
            standardError: try String(contentsOfFile: stderrPath, encoding: .utf8)
        )
    }

    /// Runs `bash -c SCRIPT` (a pipeline using imgcache, as a user types it)
    /// with only `environment`, HOME and a PATH it names.
    static func runShell(_ script: String, environment: [String: String], home: String, workingDirectory: String) throws -> RunResult {
        let outputs = try TemporaryDirectory("imgcache-shell")
        FileManager.default.createFile(atPath: outputs.appending("stdout"), contents: nil)
        FileManager.default.createFile(atPath: outputs.appending("stderr"), contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", script]
        process.environment = ["HOME": home].merging(environment) { $1 }
        process.currentDirectoryURL = URL(fileURLWithPath: workingDirectory)
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle(forWritingAtPath: outputs.appending("stdout"))
        process.standardError = FileHandle(forWritingAtPath: outputs.appending("stderr"))
        try process.run()
        return try result(of: process, outputs: outputs, limit: 60)
    }

    /// Starts `imgcache ARGUMENTS` without waiting; output is discarded. For
    /// tests that run several at once or kill one.
    static func start(_ arguments: [String], environment: [String: String] = [:], home: String) throws -> Process {
        let process = configured(arguments, environment: environment, home: home)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Starts `imgcache ARGUMENTS` with stdout and stderr written to files in
    /// `outputs` (read them with `result(of:outputs:)` once it ended), and
    /// `input` as standard input (none when nil).
    static func startCapturing(_ arguments: [String], environment: [String: String] = [:], home: String,
                               outputs: TemporaryDirectory, input: Pipe? = nil) throws -> Process {
        let process = configured(arguments, environment: environment, home: home)
        FileManager.default.createFile(atPath: outputs.appending("stdout"), contents: nil)
        FileManager.default.createFile(atPath: outputs.appending("stderr"), contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: outputs.appending("stdout"))
        process.standardError = FileHandle(forWritingAtPath: outputs.appending("stderr"))
        if let input { process.standardInput = input }
        try process.run()
        return process
    }

    /// What a process started by `startCapturing` did; waits for it to end,
    /// killing it after `limit` seconds so that a hung run fails the test instead of stalling it.
    static func result(of process: Process, outputs: TemporaryDirectory, limit: Double = 30) throws -> RunResult {
        let deadline = Date().addingTimeInterval(limit)
        while process.isRunning, Date() < deadline { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        return RunResult(
            status: process.terminationStatus,
            standardOutput: try Data(contentsOf: URL(fileURLWithPath: outputs.appending("stdout"))),
            standardError: try String(contentsOfFile: outputs.appending("stderr"), encoding: .utf8)
        )
    }

    /// The binary with `arguments`, an environment of only PATH, HOME and
    /// `environment`, and no standard input.
    private static func configured(_ arguments: [String], environment: [String: String], home: String) -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Paths.binary)
        process.arguments = arguments
        var full = ["PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME": home]
        full.merge(environment) { $1 }
        process.environment = full
        process.standardInput = FileHandle.nullDevice
        return process
    }
}
