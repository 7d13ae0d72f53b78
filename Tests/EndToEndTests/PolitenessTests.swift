import Foundation
import Testing

/// Politeness to origin servers: a cap on transfers per host, an even rate per
/// host, Retry-After, hosts that cannot be reached given up after a few
/// failures, and a deadline for the whole run.
@Suite final class PolitenessTests: FaultServerSuite {
    let work: TemporaryDirectory

    override init() throws {
        work = try TemporaryDirectory("imgcache-polite")
        try super.init()
    }

    /// `count` distinct URLs of fixture images on the fault server behind `route`.
    func urls(_ count: Int, route: String) -> [String] {
        let images = ["photo.jpg", "logo.png", "gray.jpg", "alpha.webp"]
        return (0..<count).map { faults.baseURL + "/\(route)/" + images[$0 % images.count] + "?n=\($0)" }
    }

    @Test func perHostCapsTheTransfersToOneHost() throws {
        // Each answer takes 100 ms, so transfers overlap as much as they are allowed to.
        let capped = try fetch(["prefetch", "-j", "8", "--per-host", "2", try work.write(lines: urls(12, route: "delay/100"))])
        #expect(capped.status == 0, "\(capped.standardError)")
        #expect(faults.maxInFlight == 2, "\(faults.maxInFlight) at once")
        // Without it, -j alone.
        let free = try fetch(["prefetch", "-j", "8", try work.write(lines: urls(12, route: "delay/100").map { $0 + "&free" }, to: "free.txt")])
        #expect(free.status == 0 && faults.maxInFlight > 2)
    }

    /// One server's URLs waiting their turn (`--per-host`, `--rate`) do not hold up another's: a
    /// block of stalling URLs first in the list, the other server's after it are all downloaded.
    @Test func oneServersWaitingURLsDoNotHoldUpAnother() throws {
        let stalled = (0..<40).map { faults.baseURL + "/stall?n=\($0)" }
        let names = ["photo.jpg", "logo.png", "anim.gif", "sticker.webp"]
        let fast = (0..<40).map { server.url(names[$0 % names.count] + "?n=\($0)") }
        let list = try work.write(lines: stalled + fast, to: "blocked.txt")
        let result = try fetch(["--json", "prefetch", "-j", "4", "--per-host", "2", "--timeout", "30", "--deadline", "8s", list])
        let stored = try result.jsonLines().filter { ($0["url"] as? String)?.hasPrefix(server.url("")) == true && $0["path"] as? String != nil }
        #expect(stored.count == 40, "\(result.standardError)")
        // The same with --rate: the first server's URLs spaced, the second's started meanwhile.
        let rated = (0..<30).map { server.url(names[$0 % names.count] + "?rated=\($0)") } + urls(10, route: "image")
        let second = try fetch(["prefetch", "-j", "4", "--rate", "4/s", "--deadline", "3s", try work.write(lines: rated, to: "rated.txt")])
        #expect(faults.requests.filter { $0.path.hasPrefix("/image/") }.count >= 4, "\(second.standardError)")
    }

    @Test func rateSpacesTheRequestsToOneHost() throws {
        let list = try work.write(lines: urls(6, route: "image"))
        let result = try fetch(["prefetch", "-j", "6", "--rate", "10/s", list])
        #expect(result.status == 0, "\(result.standardError)")
        let times = faults.requests.map(\.receivedAt).sorted()
        #expect(times.count == 6)
        // Six requests at 10 a second span at least half a second (a slow machine only spreads them more).
        #expect(times.last! - times.first! >= 0.45, "\(times.map { $0 - times[0] })")
        for bad in ["0/s", "-1", "5/week", "x", "1e9/s"] {
            #expect(try fetch(["prefetch", "--rate", bad, list]).status == 64, "\(bad)")
        }
        #expect(try fetch(["prefetch", "--per-host", "0", list]).status == 64)
    }

    @Test func retryAfterIsHonouredWhenRetrying() throws {
        let result = try fetch(["fetch", "--retries", "1", faults.baseURL + "/retry-after/1/photo.jpg"])
        #expect(result.status == 0, "\(result.standardError)")
        let times = faults.requests.map(\.receivedAt)
        #expect(times.count == 2 && times[1] - times[0] >= 0.95, "\(times)")

        // As an HTTP date: two seconds from now (whole seconds, so at least one).
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let retryAt = (Date().timeIntervalSince1970 + 2).rounded(.down)
        let date = formatter.string(from: Date(timeIntervalSince1970: retryAt))
        let encoded = date.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? date
        let dated = try fetch(["fetch", "--retries", "1", faults.baseURL + "/retry-after/\(encoded)/logo.png"])
        #expect(dated.status == 0, "\(dated.standardError)")
        // The retry came no earlier than the date said (however late the first request came).
        let later = faults.requests.filter { $0.path.contains("logo.png") }.map(\.receivedOnWallClock)
        #expect(later.count == 2 && later[1] >= retryAt - 0.05, "\(later) against \(retryAt)")
    }

    @Test func aHostThatCannotBeReachedIsGivenUpAfterAFewFailures() throws {
        let closed = try NginxServer.freePort()
        // A working server on the same machine, another port, is another server: not given up with it.
        let list = try work.write(lines: (0..<10).map { "http://127.0.0.1:\(closed)/img\($0).jpg" } + [server.url("photo.jpg")])
        let result = try fetch(["--json", "prefetch", "-j", "1", list])
        #expect(result.status == 1)
        let errors = try result.jsonLines().compactMap { $0["error"] as? String }
        #expect(errors.count == 10)
        #expect(errors.filter { $0.contains("connection refused") && !$0.contains("not tried") }.count == 3, "\(errors)")
        #expect(errors.filter { $0.contains("not tried: 127.0.0.1:\(closed) failed 3 times in a row (connection refused); given up for this run") }.count == 7)
        #expect(try result.jsonLines().last?["downloaded"] as? Int == 1)
        // Nothing of it is remembered as a failed URL: the next run tries again.
        let again = try fetch(["--json", "prefetch", "-j", "1", list])
        #expect(try again.jsonLines().last?["blacklisted"] as? Int == 0)
    }

    /// A server that accepts and then never answers a few URLs: each is a timeout (never a connect
    /// failure, even on a connection kept from an earlier image), and the host is not given up:
    /// every other image of it arrives.
    @Test func urlsThatStallAfterConnectingNeverTakeTheirHostDown() throws {
        let good = urls(24, route: "image")
        var lines: [String] = []
        for (index, url) in good.enumerated() {
            lines.append(url)
            if index % 3 == 2 { lines.append(faults.baseURL + "/stall?n=\(index)") }
        }
        let result = try fetch(["--json", "prefetch", "-j", "2", "--timeout", "1s", try work.write(lines: lines)])
        #expect(result.status == 1)
        let errors = try result.jsonLines().compactMap { $0["error"] as? String }
        #expect(errors.count == 8, "\(errors)")
        #expect(errors.allSatisfy { $0.contains("timed out after 1 s without progress") }, "\(errors)")
        #expect(!result.standardError.contains("given up") && !result.standardError.contains("connect timed out"), "\(result.standardError)")
        #expect(try result.jsonLines().last?["downloaded"] as? Int == 24)
    }

    @Test func aDeadlineEndsTheRunWhateverHangs() throws {
        let stalls = (0..<5).map { faults.baseURL + "/stall?n=\($0)" } + [server.url("photo.jpg")]
        let result = try fetch(["--json", "prefetch", "--deadline", "1", try work.write(lines: stalls)])
        #expect(result.status == 1)
        let lines = try result.jsonLines()
        #expect(lines.filter { ($0["error"] as? String)?.contains("not done within the run's 1 s (--deadline)") == true }.count == 5)
        #expect(lines.last?["downloaded"] as? Int == 1 && lines.last?["failed"] as? Int == 5)
        #expect(result.standardError.contains("the run's deadline (1 s) came"))
        #expect(try fetch(["prefetch", "--deadline", "soon", stalls[0]]).status == 64)
    }

    @Test func statsSaysWhatTheRunDidByOutcomeKindAndHost() throws {
        let closed = try NginxServer.freePort()
        let list = try work.write(lines: [server.url("photo.jpg"), server.url("logo.png"), server.url("status/404"),
                                          "http://127.0.0.1:\(closed)/a.jpg", server.url("photo.jpg")])
        let stats = work.appending("stats.json")
        let result = try fetch(["prefetch", "--stats", stats, list])
        #expect(result.status == 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: stats))) as? [String: Any])
        JSONContract.expect(object, matches: "prefetch --stats")
        #expect(object["urls"] as? Int == 4 && object["downloaded"] as? Int == 2 && object["repeats"] as? Int == 1)
        #expect(object["failures"] as? [String: Int] == ["http_404": 1, "connection_refused": 1])
        let sizes = try ["photo.jpg", "logo.png"].map { try Paths.fixture($0).count }.reduce(0, +)
        #expect(object["bytes_downloaded"] as? Int == sizes)
        let hosts = try #require(object["hosts"] as? [String: [String: Int]])
        // Each server apart, with its port, as --per-host counts them.
        #expect(hosts["127.0.0.1:\(server.port)"] == ["downloaded": 2, "failed": 1, "bytes": sizes], "\(hosts)")
        #expect(hosts["127.0.0.1:\(closed)"] == ["downloaded": 0, "failed": 1, "bytes": 0], "\(hosts)")
        #expect(object["remote_writes"] as? Int == 0 && object["remote_errors"] as? Int == 0)
        // A file that cannot be written is said before the run (nothing fetched), and the exit status says so.
        let requests = server.requests.count
        let refused = try fetch(["prefetch", "--stats", work.path, list])
        #expect(refused.status == 74 && refused.standardError.contains("cannot write --stats"), "\(refused.standardError)")
        #expect(server.requests.count == requests)
        #expect(try fetch(["prefetch", "--stats", work.appending("no/such/folder/s.json"), list]).status == 74)
        // The list itself, however named, is refused as --stats or --html-report (exit 64): it is left as it was.
        let before = FileManager.default.contents(atPath: list)
        for option in ["--stats", "--html-report"] {
            let overwriting = try fetch(["prefetch", option, work.path + "/./" + URL(fileURLWithPath: list).lastPathComponent, list])
            #expect(overwriting.status == 64 && overwriting.standardError.contains("the run reads: give another file"), "\(overwriting.standardError)")
        }
        // On standard input too (`< list`), and both reports into one file.
        let stdin = try ImgCacheProcess.runShell("\"$BIN\" --cache-dir '\(cacheRoot)' prefetch --stats '\(list)' < '\(list)'",
                                                 environment: ["BIN": Paths.binary, "PATH": "/usr/bin:/bin"], home: home.path, workingDirectory: "/")
        #expect(stdin.status == 64 && stdin.standardError.contains("is the list the run reads on standard input"), "\(stdin.standardError)")
        let both = try fetch(["prefetch", "--stats", work.appending("r.out"), "--html-report", work.appending("r.out"), list])
        #expect(both.status == 64 && both.standardError.contains("give each a file of its own"), "\(both.standardError)")
        #expect(FileManager.default.contents(atPath: list) == before && server.requests.count == requests)
        // A list that cannot be read to its end is not complete.
        let noColumn = try fetch(["--json", "prefetch", "--url-column", "nope", try work.write(lines: ["url", server.url("photo.jpg")], to: "t.csv")])
        let last = try noColumn.jsonLines().last
        #expect(noColumn.status == 66 && last?["complete"] as? Bool == false)
    }
}
