import Foundation
import Testing

/// The curl options people reach for first: --output-dir, --connect-timeout,
/// --max-time, --netrc-file, -x, and -u USER asking the password.
@Suite final class CurlHabitsTests: FaultServerSuite {
    @Test func outputDirCopiesEachImageUnderItsRemoteName() throws {
        let folder = home.appending("shipped/images")
        // curl -O's names: the URL's file name, as the --name recipe says.
        let result = try fetch(["fetch", "--output-dir", folder, "--name", "{stem}.{ext}", server.url("photo.jpg"), server.url("logo.png") + "?v=2#top",
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
        #expect(refused.status == 74 && refused.standardError.contains("cannot copy"), "\(refused.standardError)")
        #expect(try fetch(["fetch", "--output-dir", folder, "-o", "x.png", server.url("logo.png")]).status == 64)
    }

    @Test func maxTimeBoundsABusyTransferAndConnectTimeoutParses() throws {
        // The body starts, then stalls: the idle timeout (30 s) would wait; --max-time does not.
        let result = try fetch(["fetch", "--timeout", "30", "--max-time", "300ms", faults.baseURL + "/stall-body/photo.jpg"])
        #expect(result.status == 1)
        // Said as the limit it is, with its own value (not the idle timeout's).
        #expect(result.standardError.contains("not finished within 0.3 s (the maximum time)"), "\(result.standardError)")
        #expect(CacheInspection.temporaryFiles(under: cacheRoot).isEmpty)
        #expect(try fetch(["fetch", "--connect-timeout", "2s", server.url("logo.png")]).status == 0)
        #expect(try fetch(["fetch", "--connect-timeout", "0", server.url("logo.png")]).status == 64)
        #expect(try fetch(["fetch", "--max-time", "soon", server.url("logo.png")]).status == 64)
    }

    @Test func netrcFileGivesCredentialsAndTheyAreNotPlainRequests() throws {
        let netrc = home.appending("netrc")
        try "machine 127.0.0.1 login user password secret\n".write(toFile: netrc, atomically: false, encoding: .utf8)
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
        let result = try TerminalRun.run(["--cache-dir", cacheRoot, "fetch", "-u", "user", url], home: home.path,
                                         prompt: "password", typed: "secret\n")
        #expect(result.status == 0, "\(result.output) \(result.standardError)")
        #expect(result.output.contains("Enter host password for user 'user':"))
        #expect(!result.output.contains("secret"), "the password was echoed")
        #expect(result.output.contains(cacheRoot + "/default/"))
    }

    @Test func aDownloadOnATerminalShowsItsProgressAndPrefetchItsBytes() throws {
        let fetched = try TerminalRun.run(["--cache-dir", cacheRoot, "fetch", faults.baseURL + "/drip/photo.jpg"], home: home.path)
        #expect(fetched.status == 0)
        // The status line: bytes of the total, the percentage, then the rate; cleared before the path is printed.
        #expect(fetched.output.contains(" of 2.2 kB ("), "\(fetched.output)")
        #expect(fetched.output.contains("B/s"), "\(fetched.output)")
        #expect(fetched.output.contains(cacheRoot + "/default/"))
        // -q: nothing but the path.
        let quiet = try TerminalRun.run(["--cache-dir", cacheRoot + "-q", "-q", "fetch", faults.baseURL + "/drip/logo.png"], home: home.path)
        #expect(!quiet.output.contains(" of ") && quiet.output.contains("/default/"))

        let list = home.appending("urls.txt")
        try ["sticker.webp", "anim.gif", "gray.jpg"].map { faults.baseURL + "/drip/" + $0 }.joined(separator: "\n")
            .write(toFile: list, atomically: false, encoding: .utf8)
        let prefetched = try TerminalRun.run(["--cache-dir", cacheRoot, "prefetch", "-j", "1", list], home: home.path)
        #expect(prefetched.status == 0)
        #expect(prefetched.output.contains("/3") && prefetched.output.contains("kB/s"), "\(prefetched.output)")
        #expect(prefetched.output.contains("3 URLs: 3 downloaded"))
    }
}
