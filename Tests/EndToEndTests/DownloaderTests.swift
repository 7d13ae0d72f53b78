import Foundation
import ImgCacheCore
import Testing

/// The download engine against real servers on loopback: nginx for keep-alive
/// and order, the fault server for everything that goes wrong.
@Suite final class DownloaderTests {
    let faults: FaultServer
    let bodies: TemporaryDirectory

    init() throws {
        faults = try FaultServer(directory: Paths.fixtures.path)
        bodies = try TemporaryDirectory("imgcache-bodies")
    }

    deinit { faults.stop() }

    func request(_ url: String) throws -> DownloadRequest {
        DownloadRequest(url: try RemoteURL(parsing: url), bodyDirectory: bodies.path)
    }

    /// Submits `requests` as one batch and waits for every answer, in submission order.
    func downloadAll(_ requests: [(DownloadRequest, DownloadPriority)], with downloader: Downloader) -> [Result<DownloadedBody, DownloadError>] {
        let answers = BlockingQueue<(Int, Result<DownloadedBody, DownloadError>)>()
        downloader.submit(requests.enumerated().map { index, pair in
            DownloadSubmission(request: pair.0, priority: pair.1) { answers.push((index, $0)) }
        })
        var results = [Result<DownloadedBody, DownloadError>?](repeating: nil, count: requests.count)
        for _ in requests.indices {
            let (index, result) = answers.pop()
            results[index] = result
        }
        return results.map { $0! }
    }

    func configuration(concurrency: Int = 6, order: DownloadOrder = .fifo) -> DownloadConfiguration {
        var configuration = DownloadConfiguration()
        configuration.maximumConcurrentDownloads = concurrency
        configuration.order = order
        return configuration
    }

    func failure(_ result: Result<DownloadedBody, DownloadError>) -> DownloadError? {
        if case .failure(let error) = result { return error }
        return nil
    }

    var leftoverBodies: [String] { (try? FileManager.default.contentsOfDirectory(atPath: bodies.path)) ?? [] }

    // MARK: Scheduling

    @Test(arguments: [1, 3, 6])
    func atMostNTransfersAreInFlight(concurrency: Int) throws {
        let downloader = try Downloader(configuration: configuration(concurrency: concurrency))
        // The gate holds each answer until `concurrency` requests wait at once: a
        // client that opened more would push the peak above it.
        let requests = try (0..<(concurrency * 3)).map { (try request(faults.baseURL + "/gate/\(concurrency)/logo.png?n=\($0)"), DownloadPriority.normal) }
        let results = downloadAll(requests, with: downloader)
        #expect(results.allSatisfy { failure($0) == nil })
        #expect(faults.maxInFlight == concurrency)
        #expect(faults.requests.count == concurrency * 3)
    }

    @Test func connectionsAreKeptAliveAcrossTransfers() throws {
        let nginx = try NginxServer()
        let downloader = try Downloader(configuration: configuration(concurrency: 2))
        let names = ["photo.jpg", "logo.png", "anim.gif", "sticker.webp", "lossless.webp"]
        let requests = try (0..<20).map { (try request(nginx.url(names[$0 % names.count]) + "?n=\($0)"), DownloadPriority.normal) }
        #expect(downloadAll(requests, with: downloader).allSatisfy { failure($0) == nil })
        let logged = nginx.requests(atLeast: 20)
        let connections = Set(logged.map(\.connection))
        #expect(logged.count == 20)
        #expect(connections.count <= 2, "\(connections)")
    }

    @Test(arguments: [DownloadOrder.fifo, .lifo])
    func theOrderDecidesWhichQueuedDownloadStartsFirst(order: DownloadOrder) throws {
        let nginx = try NginxServer()
        let downloader = try Downloader(configuration: configuration(concurrency: 1, order: order))
        let requests = try (1...5).map { (try request(nginx.url("logo.png?n=\($0)")), DownloadPriority.normal) }
        _ = downloadAll(requests, with: downloader)
        let seen = nginx.requests(atLeast: 5).map(\.uri)
        let expected = (1...5).map { "/logo.png?n=\($0)" }
        #expect(seen == (order == .fifo ? expected : expected.reversed()))
    }

    @Test func higherPrioritiesStartFirstWhateverTheOrder() throws {
        let nginx = try NginxServer()
        let downloader = try Downloader(configuration: configuration(concurrency: 1))
        let plan: [(String, DownloadPriority)] = [("low1", .low), ("normal1", .normal), ("high1", .high),
                                                   ("low2", .low), ("high2", .high), ("normal2", .normal)]
        _ = downloadAll(try plan.map { (try request(nginx.url("logo.png?\($0.0)")), $0.1) }, with: downloader)
        #expect(nginx.requests(atLeast: 6).map(\.uri) == ["high1", "high2", "normal1", "normal2", "low1", "low2"].map { "/logo.png?\($0)" })
    }

    // MARK: Bodies and cancelling

    @Test func aSmallBodyStaysInMemoryAndALargeOneGoesToAFile() throws {
        // At -j 256 a transfer keeps at most 256 KiB in memory.
        let downloader = try Downloader(configuration: configuration(concurrency: 256))
        var large = try request(faults.baseURL + "/endless")
        large.maximumBytes = 300_000
        let small = downloadAll([(try request(faults.baseURL + "/image/photo.jpg"), .normal)], with: downloader)[0]
        let file = try small.get()
        #expect(file.spilledPath == nil)
        #expect(try Data(file.bytes()) == Paths.fixture("photo.jpg"))
        #expect(leftoverBodies.isEmpty, "no file for a body that fits in memory")
        // An endless body goes to a file once past the limit; cut at the size limit, the file goes too.
        #expect(failure(downloadAll([(large, .normal)], with: downloader)[0]) == .tooLarge(limit: 300_000))
        #expect(leftoverBodies.isEmpty)
    }

    @Test func cancellingARequestAbortsTheTransferAndRemovesTheBody() throws {
        // At -j 256 an endless body goes to a file after 256 KiB.
        let downloader = try Downloader(configuration: configuration(concurrency: 256))
        let answer = BlockingQueue<Result<DownloadedBody, DownloadError>>()
        let started = BlockingQueue<Bool>()
        let ticket = downloader.submit(DownloadSubmission(
            request: try request(faults.baseURL + "/endless"),
            onEvent: { if case .progress(let received, _) = $0, received > 262_144 { started.push(true) } },
            completion: { answer.push($0) }))
        _ = started.pop()
        #expect(leftoverBodies.count == 1, "the body went to a file")
        downloader.cancel(ticket)
        #expect(failure(answer.pop()) == .cancelled)
        #expect(leftoverBodies.isEmpty, "the transfer was aborted, not left to run")
        downloader.close()
    }

    // MARK: Failures, classified

    @Test func aStalledServerTimesOut() throws {
        let downloader = try Downloader(configuration: configuration())
        var stalled = try request(faults.baseURL + "/stall")
        stalled.timeout = 1
        var stalledBody = try request(faults.baseURL + "/stall-body/photo.jpg")
        stalledBody.timeout = 1
        let results = downloadAll([(stalled, .normal), (stalledBody, .normal)], with: downloader)
        #expect(results.map(failure) == [.timeout(seconds: 1), .timeout(seconds: 1)])
        #expect(results.allSatisfy { failure($0)?.isTransient == true })
        #expect(leftoverBodies.isEmpty)
    }

    @Test func aTruncatedBodyIsAnErrorAndNothingIsKept() throws {
        let downloader = try Downloader(configuration: configuration())
        let result = downloadAll([(try request(faults.baseURL + "/truncated/photo.jpg"), .normal)], with: downloader)[0]
        guard case .truncated(let detail)? = failure(result) else { Issue.record("\(result)"); return }
        let size = try Paths.fixture("photo.jpg").count
        #expect(detail == "received \(size / 2) of \(size) bytes")
        #expect(leftoverBodies.isEmpty)
    }

    @Test func aResetConnectionIsReported() throws {
        let downloader = try Downloader(configuration: configuration())
        let result = downloadAll([(try request(faults.baseURL + "/reset/photo.jpg"), .normal)], with: downloader)[0]
        #expect(failure(result) == .connectionReset)
        #expect(failure(result)?.isTransient == true)
    }

    @Test func anEndlessBodyIsCutAtTheSizeLimit() throws {
        // At -j 256 the endless body goes to a file after 256 KiB, which must go too.
        let downloader = try Downloader(configuration: configuration(concurrency: 256))
        var endless = try request(faults.baseURL + "/endless")
        endless.maximumBytes = 300_000
        var declared = try request(faults.baseURL + "/image/photo.jpg")
        declared.maximumBytes = 1000
        let results = downloadAll([(endless, .normal), (declared, .normal)], with: downloader)
        #expect(results.map(failure) == [.tooLarge(limit: 300_000), .tooLarge(limit: 1000)])
        #expect(failure(results[0])?.isTransient == false)
        #expect(leftoverBodies.isEmpty)
    }

    @Test(arguments: [(404, false), (410, false), (403, false), (408, true), (429, true), (500, true), (503, true)])
    func statusesAreMappedAndClassified(code: Int, transient: Bool) throws {
        let downloader = try Downloader(configuration: configuration())
        let result = downloadAll([(try request(faults.baseURL + "/status/\(code)"), .normal)], with: downloader)[0]
        #expect(failure(result) == .httpStatus(code))
        #expect(failure(result)?.isTransient == transient)
    }

    @Test func retriesTryATransientFailureAgainUntilItSucceeds() throws {
        let downloader = try Downloader(configuration: configuration())
        var flaky = try request(faults.baseURL + "/flaky/2/503/logo.png")
        flaky.retries = 2
        let retries = BlockingQueue<DownloadEvent>()
        let answer = BlockingQueue<Result<DownloadedBody, DownloadError>>()
        downloader.submit(DownloadSubmission(request: flaky, onEvent: { if case .retrying = $0 { retries.push($0) } },
                                             completion: { answer.push($0) }))
        let file = try answer.pop().get()
        #expect(file.response.attempts == 3)
        #expect(faults.requestCount(path: "/flaky/2/503/logo.png") == 3)
        guard case .retrying(1, 2, let delay, .httpStatus(503)) = retries.pop() else { Issue.record("no first retry event"); return }
        #expect(delay > 0 && delay <= RetryPolicy().maximumDelay)
    }

    @Test func retriesGiveUpAfterTheLimit() throws {
        let downloader = try Downloader(configuration: configuration())
        var flaky = try request(faults.baseURL + "/flaky/5/500/logo.png")
        flaky.retries = 1
        let result = downloadAll([(flaky, .normal)], with: downloader)[0]
        #expect(failure(result) == .httpStatus(500))
        #expect(faults.requestCount(path: "/flaky/5/500/logo.png") == 2)
    }

    @Test func aPermanentFailureIsNeverRetried() throws {
        let downloader = try Downloader(configuration: configuration())
        var missing = try request(faults.baseURL + "/status/404")
        missing.retries = 3
        #expect(failure(downloadAll([(missing, .normal)], with: downloader)[0]) == .httpStatus(404))
        #expect(faults.requestCount(path: "/status/404") == 1)
    }

    // MARK: What the request carries

    @Test func headersReplaceOrRemoveTheDefaults() throws {
        let downloader = try Downloader(configuration: configuration())
        var custom = try request(faults.baseURL + "/image/logo.png?custom")
        custom.headers = [HTTPHeader(name: "X-Trace", value: "abc 123"), HTTPHeader(name: "accept", value: "image/webp"),
                          HTTPHeader(name: "User-Agent", value: "")]
        let plain = try request(faults.baseURL + "/image/logo.png?plain")
        _ = downloadAll([(custom, .normal), (plain, .normal)], with: downloader)
        let sent = try #require(faults.requests.first { $0.target.hasSuffix("?custom") })
        #expect(sent.header("X-Trace") == "abc 123")
        #expect(sent.headers.filter { $0.name.lowercased() == "accept" }.map(\.value) == ["image/webp"])
        #expect(sent.header("User-Agent") == nil)
        let defaults = try #require(faults.requests.first { $0.target.hasSuffix("?plain") })
        #expect(defaults.header("Accept") == "image/avif,image/jxl,image/webp,image/jpeg,image/png,image/gif,image/heic,image/heif,image/tiff,image/bmp,image/x-icon,image/svg+xml,image/*;q=0.8,*/*;q=0.5")
        #expect(defaults.header("User-Agent") == "imgcache/\(ImgCache.version)")
    }

    @Test func credentialsAreSentAsBasicAuthentication() throws {
        let downloader = try Downloader(configuration: configuration())
        var withCredentials = try request(faults.baseURL + "/need-auth/logo.png")
        withCredentials.credentials = Credentials(user: "user", password: "secret")
        let without = try request(faults.baseURL + "/need-auth/logo.png?none")
        let results = downloadAll([(withCredentials, .normal), (without, .normal)], with: downloader)
        #expect(failure(results[0]) == nil)
        #expect(failure(results[1]) == .httpStatus(401))
    }

    @Test func cookiesSetByTheServerAreSentBackAndKeptInTheJar() throws {
        let jar = bodies.appending("cookies.txt")
        var settings = configuration(concurrency: 1)
        settings.cookieJar = jar
        let first = try Downloader(configuration: settings)
        _ = downloadAll([(try request(faults.baseURL + "/set-cookie/logo.png"), .normal)], with: first)
        let sameProcess = downloadAll([(try request(faults.baseURL + "/need-cookie/logo.png"), .normal)], with: first)
        #expect(failure(sameProcess[0]) == nil)
        first.close()
        #expect(try String(contentsOfFile: jar, encoding: .utf8).contains("session\ts3cr3t"))

        let later = try Downloader(configuration: settings)
        let fromJar = downloadAll([(try request(faults.baseURL + "/need-cookie/logo.png?later"), .normal)], with: later)
        #expect(failure(fromJar[0]) == nil, "a new downloader reads the jar")

        let noJar = try Downloader(configuration: configuration())
        let without = downloadAll([(try request(faults.baseURL + "/need-cookie/logo.png?none"), .normal)], with: noJar)
        #expect(failure(without[0]) == .httpStatus(403), "no jar, no cookies")
    }

    @Test func aConditionalRequestAnswered304IsNotModified() throws {
        let nginx = try NginxServer()
        let downloader = try Downloader(configuration: configuration())
        let first = try downloader.download(try request(nginx.url("logo.png")))
        var conditional = try request(nginx.url("logo.png"))
        conditional.validators = Validators(etag: first.response.etag, lastModified: first.response.lastModified)
        let second = try downloader.download(conditional)
        #expect(second.response.notModified)
        #expect(second.response.byteCount == 0)
        #expect(nginx.requests(atLeast: 2).map(\.status) == [200, 304])
        #expect(nginx.requests.last?.ifNoneMatch.replacingOccurrences(of: "\\x22", with: "\"") == first.response.etag)
    }

    // MARK: TLS and HTTP/2

    @Test func aSelfSignedCertificateFailsUnlessVerificationIsOff() throws {
        let nginx = try NginxServer(tls: true)
        let strict = try Downloader(configuration: configuration())
        let refused = downloadAll([(try request(nginx.tlsURL("logo.png")), .normal)], with: strict)[0]
        guard case .tlsCertificate? = failure(refused) else { Issue.record("\(refused)"); return }
        #expect(failure(refused)?.isTransient == false)

        var lax = configuration()
        lax.allowInvalidCertificates = true
        let insecure = try Downloader(configuration: lax)
        #expect(failure(downloadAll([(try request(nginx.tlsURL("logo.png")), .normal)], with: insecure)[0]) == nil)
    }

    @Test func concurrentTransfersToAnHTTP2ServerShareOneConnection() throws {
        let nginx = try NginxServer(tls: true)
        var lax = configuration(concurrency: 6)
        lax.allowInvalidCertificates = true
        let downloader = try Downloader(configuration: lax)
        let requests = try (0..<12).map { (try request(nginx.tlsURL("photo.jpg?n=\($0)")), DownloadPriority.normal) }
        #expect(downloadAll(requests, with: downloader).allSatisfy { failure($0) == nil })
        #expect(nginx.requests(atLeast: 12).count == 12)
        #expect(nginx.requests.allSatisfy { $0.protocolVersion == "HTTP/2.0" })
        #expect(Set(nginx.requests.map(\.connection)).count == 1)
    }

    @Test func submissionsAfterCloseAreCancelled() throws {
        let downloader = try Downloader(configuration: configuration())
        downloader.close()
        #expect(throws: DownloadError.cancelled) { try downloader.download(try self.request(self.faults.baseURL + "/image/logo.png")) }
        #expect(faults.requests.isEmpty)
    }
}
