import Foundation
import Testing

/// The curl options people reach for first: --output-dir, --connect-timeout,
/// --max-time, --netrc-file, -x, and -u USER asking the password.
@Suite final class CurlHabitsTests: FaultServerSuite {
    @Test func outputDirCopiesEachImageUnderItsRemoteName() throws {
        let folder = home.appending("shipped/images")
        let result = try fetch(["fetch", "--output-dir", folder, server.url("photo.jpg"), server.url("logo.png") + "?v=2#top",
                                server.url("status/404")])
        #expect(result.status == 1)
        #expect(result.lines.count == 2, "the cache paths are still printed: \(result.output)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: folder + "/photo.jpg")) == Paths.fixture("photo.jpg"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: folder + "/logo.png")) == Paths.fixture("logo.png"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).sorted() == ["logo.png", "photo.jpg"])
        // A hit is copied too; a folder that cannot be made is exit 74, the cache untouched.
        let blocked = home.appending("file")
        FileManager.default.createFile(atPath: blocked, contents: Data("x".utf8))
        let refused = try fetch(["fetch", "--output-dir", blocked + "/sub", server.url("photo.jpg")])
        #expect(refused.status == 74 && refused.standardError.contains("cannot write"))
        #expect(try fetch(["fetch", "--output-dir", folder, "-o", "x.png", server.url("logo.png")]).status == 64)
    }

    @Test func maxTimeBoundsABusyTransferAndConnectTimeoutParses() throws {
        // The body starts, then stalls: the idle timeout (30 s) would wait; --max-time does not.
        let result = try fetch(["fetch", "--timeout", "30", "--max-time", "300ms", faults.baseURL + "/stall-body/photo.jpg"])
        #expect(result.status == 1)
        #expect(result.standardError.contains("timed out"), "\(result.standardError)")
        #expect(CacheInspection.temporaryFiles(under: cacheRoot).isEmpty)
        #expect(try fetch(["fetch", "--connect-timeout", "2s", server.url("logo.png")]).status == 0)
        #expect(try fetch(["fetch", "--connect-timeout", "0", server.url("logo.png")]).status == 64)
        #expect(try fetch(["fetch", "--max-time", "soon", server.url("logo.png")]).status == 64)
    }

    @Test func netrcFileGivesCredentialsAndTheyAreNotPlainRequests() throws {
        let netrc = home.appending("netrc")
        try "machine 127.0.0.1 login user password secret\n".write(toFile: netrc, atomically: true, encoding: .utf8)
        let url = faults.baseURL + "/need-auth/photo.jpg"
        // Without it: 401, remembered for plain requests only.
        #expect(try fetch(["fetch", url]).status == 1)
        let result = try fetch(["fetch", "--netrc-file", netrc, url])
        #expect(result.status == 0, "\(result.standardError)")
        let request = try #require(faults.requests.last)
        #expect(request.header("Authorization") == "Basic " + Data("user:secret".utf8).base64EncodedString())
        #expect(try fetch(["fetch", "--netrc-file", "", url]).status == 64)
    }

    @Test func proxyCarriesEveryRequest() throws {
        // The fault server answers absolute-form requests as a proxy receives them; the host never resolves.
        let result = try fetch(["fetch", "-x", faults.baseURL, "http://images.invalid/image/anim.gif"])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(faults.requests.last?.target.hasPrefix("http://images.invalid/") == true)
        #expect(try fetch(["fetch", "--proxy", "ftp://127.0.0.1:1", server.url("logo.png")]).status == 64)
    }

    @Test func userWithoutPasswordIsAskedOnTheTerminalWithoutEcho() throws {
        let url = faults.baseURL + "/need-auth/sticker.webp"
        // No terminal: a clear usage error.
        let alone = try fetch(["fetch", "-u", "hunter2", url])
        #expect(alone.status == 64 && alone.standardError.contains("no terminal") && !alone.standardError.contains("hunter2"))
        // On a terminal (a pty): the prompt, the password typed, not echoed.
        let script = """
            import os, pty, sys, select
            pid, fd = pty.fork()
            if pid == 0:
                os.execv(sys.argv[1], sys.argv[1:])
            seen = b""
            typed = False
            while True:
                ready, _, _ = select.select([fd], [], [], 20)
                if not ready: break
                try: chunk = os.read(fd, 1024)
                except OSError: break
                if not chunk: break
                seen += chunk
                if not typed and b"password" in seen:
                    os.write(fd, b"secret\\n")
                    typed = True
            _, status = os.waitpid(pid, 0)
            sys.stdout.write(seen.decode("utf-8", "replace"))
            sys.exit(os.waitstatus_to_exitcode(status))
            """
        let result = try ImgCacheProcess.runShell(
            "python3 -c '\(script.replacingOccurrences(of: "'", with: "'\\''"))' \(Paths.binary) --cache-dir \(cacheRoot) fetch -u user \(url)",
            environment: ["PATH": "/usr/bin:/bin:/usr/local/bin"], home: home.path, workingDirectory: home.path)
        #expect(result.status == 0, "\(result.output) \(result.standardError)")
        #expect(result.output.contains("Enter host password for user 'user':"))
        #expect(!result.output.contains("secret"), "the password was echoed")
        #expect(result.output.contains(cacheRoot + "/default/"))
    }
}
