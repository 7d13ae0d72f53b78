import Foundation
import Testing

/// HTTP as curl users expect it: encodings asked for and decoded, the
/// certificate authorities they name (options or environment) trusted, TLS
/// failures in libcurl's own words, and the files a request needs checked first.
@Suite final class HTTPHabitsTests: FaultServerSuite {
    var namespace: String { cacheRoot + "/default" }

    @Test func anImageSentGzipEncodedIsStoredAsTheImage() throws {
        let result = try fetch(["fetch", faults.baseURL + "/gzip/photo.jpg"])
        #expect(result.status == 0, "\(result.standardError)")
        let stored = try #require(result.lines.first)
        #expect(FileManager.default.contents(atPath: stored) == (try Paths.fixture("photo.jpg")))
        let asked = faults.requests.first { $0.path == "/gzip/photo.jpg" }?.header("Accept-Encoding") ?? ""
        #expect(asked.contains("gzip") && asked.contains("deflate"), "\(asked)")
    }

    @Test func aSelfSignedCertificateIsRefusedInLibcurlsWordsAndTrustedWhereNamed() throws {
        let tls = try NginxServer(tls: true)
        let url = tls.tlsURL("logo.png")
        let refused = try fetch(["fetch", url])
        #expect(refused.status == 1)
        #expect(refused.standardError.contains("self-signed certificate"), "\(refused.standardError)")

        let named = try fetch(["fetch", "--cacert", tls.certificatePath, tls.tlsURL("logo.png?cacert")])
        #expect(named.status == 0, "\(named.standardError)")
        for variable in ["CURL_CA_BUNDLE", "SSL_CERT_FILE"] {
            let trusted = try fetch(["fetch", tls.tlsURL("logo.png?" + variable)], environment: [variable: tls.certificatePath])
            #expect(trusted.status == 0, "\(variable): \(trusted.standardError)")
        }

        // A folder of hashed certificates, as c_rehash (openssl rehash) makes it.
        let folder = try TemporaryDirectory("imgcache-capath")
        try FileManager.default.copyItem(atPath: tls.certificatePath, toPath: folder.appending("test.pem"))
        let rehash = Process()
        rehash.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        rehash.arguments = ["rehash", folder.path]
        try rehash.run()
        rehash.waitUntilExit()
        let inFolder = try fetch(["fetch", "--capath", folder.path, tls.tlsURL("logo.png?capath")])
        #expect(inFolder.status == 0, "\(inFolder.standardError)")
        let fromEnvironment = try fetch(["fetch", tls.tlsURL("logo.png?dir")], environment: ["SSL_CERT_DIR": folder.path])
        #expect(fromEnvironment.status == 0, "\(fromEnvironment.standardError)")
    }

    @Test func filesARequestNeedsThatCannotBeUsedAreErrorsNamingThem() throws {
        let url = faults.baseURL + "/image/logo.png"
        let missing = home.appending("missing.pem")
        let cacert = try fetch(["fetch", "--cacert", missing, url])
        #expect(cacert.status == 66)
        #expect(cacert.errorLines == ["imgcache: error: cannot read the certificate authorities \(missing) (--cacert): No such file or directory"])
        let bundle = try fetch(["fetch", url], environment: ["CURL_CA_BUNDLE": missing])
        #expect(bundle.status == 66 && bundle.standardError.contains("(CURL_CA_BUNDLE)"))
        let netrc = try fetch(["fetch", "--netrc-file", missing, url])
        #expect(netrc.status == 66 && netrc.standardError.contains("cannot read the netrc file \(missing)"), "\(netrc.standardError)")
        let jar = try fetch(["fetch", "--cookies", home.appending("no/such/folder/jar.txt"), url])
        #expect(jar.status == 74 && jar.standardError.contains("cannot write the cookie jar"), "\(jar.standardError)")
        let folder = try fetch(["fetch", "--cookies", home.path, url])
        #expect(folder.status == 66 && folder.standardError.contains("it is a folder"), "\(folder.standardError)")
        // Nothing was asked of the server.
        #expect(faults.requestCount(path: "/image/logo.png") == 0)
    }

    @Test func aHitNeedsNoneOfTheFilesARequestNeedsAndAMissInTheSameRunIsRefusedOnce() throws {
        let cached = faults.baseURL + "/image/photo.jpg"
        #expect(try fetch(["fetch", cached]).status == 0)
        let missing = home.appending("missing.pem")
        // Certificate authorities, a netrc file and a cookie jar that cannot be used: a hit reads none of them.
        for (arguments, environment) in [([String](), ["CURL_CA_BUNDLE": missing]), (["--cacert", missing], [:]),
                                         (["--capath", missing], [:]), (["--netrc-file", missing], [:]),
                                         (["--cookies", home.path], [:])] {
            let hit = try fetch(["fetch"] + arguments + [cached], environment: environment)
            #expect(hit.status == 0 && hit.standardError.isEmpty, "\(arguments) \(environment): \(hit.standardError)")
            #expect(hit.lines.count == 1 && hit.lines[0].hasSuffix(".jpg"))
        }
        // A run with misses answers its hits and says the problem once, with the file's status.
        let list = home.appending("list.txt")
        let misses = (1...3).map { faults.baseURL + "/image/logo.png?\($0)" }
        try ([cached] + misses).joined(separator: "\n").write(toFile: list, atomically: false, encoding: .utf8)
        let run = try fetch(["--json", "prefetch", list], environment: ["CURL_CA_BUNDLE": missing])
        #expect(run.status == 66, "\(run.standardError)")
        #expect(run.errorLines == ["imgcache: error: cannot read the certificate authorities \(missing) (CURL_CA_BUNDLE): No such file or directory"])
        let lines = try run.jsonLines()
        #expect(lines.first { $0["url"] as? String == cached }?["cache"] as? String == "disk")
        #expect(lines.filter { ($0["error"] as? String)?.hasPrefix("cannot read the certificate authorities") == true }.count == 3,
                "\(run.output)")
        #expect(faults.requestCount(path: "/image/logo.png") == 0)
    }

    @Test func aFIFOOrALinkToAFileWithoutCertificatesIsRefusedOnceAndAStaleCopyIsKept() throws {
        let fifo = home.appending("fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        let notPEM = home.appending("not.pem"), link = home.appending("link.pem")
        try "no certificate here\n".write(toFile: notPEM, atomically: false, encoding: .utf8)
        #expect(symlink(notPEM, link) == 0)
        let misses = (1...3).map { faults.baseURL + "/image/logo.png?fifo=\($0)" }
        // A FIFO would have kept libcurl waiting in open(), deaf to SIGTERM: each run is bounded.
        for (arguments, environment, named) in [(["--cacert", fifo], [String: String](), "--cacert"), ([], ["CURL_CA_BUNDLE": fifo], "CURL_CA_BUNDLE"),
                                                (["--netrc-file", fifo], [:], "--netrc-file"), (["--cookies", fifo], [:], "--cookies"),
                                                (["--cacert", link], [:], "--cacert"), ([], ["SSL_CERT_FILE": link], "SSL_CERT_FILE")] {
            let outputs = try TemporaryDirectory("imgcache-fifo")
            let process = try ImgCacheProcess.startCapturing(["--cache-dir", cacheRoot, "fetch"] + arguments + misses,
                                                             environment: environment, home: home.path, outputs: outputs)
            let result = try ImgCacheProcess.result(of: process, outputs: outputs, limit: 20)
            #expect(result.status == 66, "\(arguments) \(environment): \(result.status) \(result.standardError)")
            #expect(result.errorLines.count == 1 && result.standardError.contains("(\(named))"), "\(result.standardError)")
        }
        #expect(faults.requestCount(path: "/image/logo.png") == 0)
        // A refresh that cannot be made for this machine's reason reports it and keeps the cached copy.
        let cached = faults.baseURL + "/image/photo.jpg"
        let stored = try #require(try fetch(["fetch", cached]).lines.first)
        let refreshed = try fetch(["fetch", "--refresh", "--cacert", link, cached])
        #expect(refreshed.status == 66 && refreshed.errorLines.count == 1, "\(refreshed.standardError)")
        #expect(FileManager.default.contents(atPath: stored) == (try Paths.fixture("photo.jpg")))
    }

    @Test func aCookieJarReachedThroughALinkIsSavedToItsTargetAndTheLinkStays() throws {
        let real = home.appending("real-jar.txt"), link = home.appending("jar.txt")
        try "# Netscape HTTP Cookie File\n".write(toFile: real, atomically: false, encoding: .utf8)
        #expect(symlink(real, link) == 0)
        let result = try fetch(["fetch", "--cookies", link, faults.baseURL + "/set-cookie/logo.png"])
        #expect(result.status == 0, "\(result.standardError)")
        let attributes = try FileManager.default.attributesOfItem(atPath: link)
        #expect(attributes[.type] as? FileAttributeType == .typeSymbolicLink)
        #expect((try String(contentsOfFile: real, encoding: .utf8)).contains("s3cr3t"))
    }

    @Test func aCertificateFileThatHoldsNoCertificateIsAnErrorNamingIt() throws {
        let notPEM = Paths.fixtures.appendingPathComponent("logo.png").path
        let result = try fetch(["fetch", "--cacert", notPEM, faults.baseURL + "/image/logo.png"])
        #expect(result.status == 66 && result.standardError.contains("no PEM certificate"), "\(result.standardError)")
    }

    @Test func equivalentURLsShareOneEntryAndKeepTheirOwnSpelling() throws {
        let plain = server.url("logo.png")
        #expect(try fetch(["fetch", plain]).status == 0)
        let spelled = "HTTP://127.0.0.1:\(server.port)/./%6Cogo.png"
        let again = try fetch(["--json", "fetch", spelled])
        #expect(again.status == 0, "\(again.standardError)")
        let line = try again.jsonLines().first
        #expect(line?["cache"] as? String == "disk")
        #expect(line?["url"] as? String == spelled)
        #expect(server.requestCount("logo.png") == 1)
    }

    /// A raw UTF-8 URL is the request its percent-encoded form is (RFC 3986 §6): one entry, one download.
    @Test func aRawUTF8URLAndItsEncodedFormShareOneEntry() throws {
        let raw = server.url("photo.jpg?name=café&city=Zürich")
        #expect(try fetch(["fetch", raw]).status == 0)
        for spelled in [server.url("photo.jpg?name=caf%C3%A9&city=Z%C3%BCrich"), server.url("photo.jpg?name=caf%c3%a9&city=Z%c3%bcrich")] {
            let again = try fetch(["--json", "fetch", spelled])
            #expect(try again.jsonLines().first?["cache"] as? String == "disk", "\(spelled): \(again.output) \(again.standardError)")
        }
        #expect(server.requests.filter { $0.uri.hasPrefix("/photo.jpg") }.count == 1)
        #expect(CacheInspection.storedFiles(under: cacheRoot + "/default").count == 1)
    }
}
