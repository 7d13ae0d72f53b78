import Foundation

/// Runs the binary on a pseudo-terminal (Python's pty module), as a person at
/// a terminal would: standard output and error both go to the terminal, and
/// `typed` is typed once `prompt` appears. Returns what the terminal showed.
enum TerminalRun {
    static func run(_ arguments: [String], home: String, prompt: String? = nil, typed: String = "") throws -> RunResult {
        let script = """
            import os, pty, sys, select
            prompt, typed = sys.argv[1].encode(), sys.argv[2].encode()
            pid, fd = pty.fork()
            if pid == 0:
                os.execv(sys.argv[3], sys.argv[3:])
            seen, sent = b"", False
            while True:
                ready, _, _ = select.select([fd], [], [], 30)
                if not ready: break
                try: chunk = os.read(fd, 4096)
                except OSError: break
                if not chunk: break
                seen += chunk
                if prompt and not sent and prompt in seen:
                    os.write(fd, typed)
                    sent = True
            _, status = os.waitpid(pid, 0)
            sys.stdout.write(seen.decode("utf-8", "replace"))
            sys.exit(os.waitstatus_to_exitcode(status))
            """
        let quoted = ([prompt ?? "", typed, Paths.binary] + arguments).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        return try ImgCacheProcess.runShell(
            "python3 -c '\(script.replacingOccurrences(of: "'", with: "'\\''"))' " + quoted.joined(separator: " "),
            environment: ["PATH": "/usr/bin:/bin:/usr/local/bin", "TERM": "xterm"], home: home, workingDirectory: home)
    }
}
