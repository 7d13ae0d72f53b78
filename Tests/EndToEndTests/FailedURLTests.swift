import Foundation
import ImgCacheCore
import Testing

/// The failed-URL list (SDWebImage's failedURLs) across processes: what goes
/// on it, how long it stays, and how to get past it.
@Suite final class FailedURLTests: FaultServerSuite {
    var namespace: String { cacheRoot + "/default" }
    var records: [String] { CacheInspection.failedRecords(inNamespace: namespace) }

    /// Moves every failure record's time back by `seconds`.
    func ageRecords(by seconds: Double) throws {
        for record in records {
            let path = namespace + "/failed/" + record
            let modified = try #require(try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date)
            try FileManager.default.setAttributes([.modificationDate: modified.addingTimeInterval(-seconds)], ofItemAtPath: path)
        }
    }

    func failedCount() throws -> Int? {
        try fetch(["--json", "cache-info"]).jsonLines().first?["failed_urls"] as? Int
    }

    @Test func a404IsRememberedAcrossProcessesUntilRetryFailedSucceeds() throws {
        // The first request gets a 404, later ones the image.
        let url = faults.baseURL + "/flaky/1/404/logo.png"
        let first = try fetch(["fetch", url])
        #expect(first.status == 1)
        #expect(first.standardError.contains("HTTP 404 Not Found"))
        #expect(records.count == 1)
        #expect(try failedCount() == 1)

        let fast = try fetch(["fetch", url])
        #expect(fast.status == 1)
        // The wait left is about a day ("1 day" or "23 hours", by the second it is read).
        #expect(fast.errorLines.count == 1)
        #expect(fast.errorLines.first?.hasPrefix("imgcache: error: \(url): failed just now (HTTP 404 Not Found); not tried again for ") == true,
                "\(fast.standardError)")
        #expect(fast.errorLines.first?.hasSuffix("; --retry-failed tries it now") == true)
        #expect(faults.requests.count == 1)

        let retried = try fetch(["--json", "fetch", "--retry-failed", url])
        #expect(retried.status == 0, "\(retried.standardError)")
        #expect(try retried.jsonLines().first?["cache"] as? String == "none")
        #expect(faults.requests.count == 2)
        #expect(records.isEmpty)
        #expect(try failedCount() == 0)
        // Now it is an ordinary hit.
        #expect(try fetch(["--json", "fetch", url]).jsonLines().first?["cache"] as? String == "disk")
        #expect(faults.requests.count == 2)
    }

    @Test func aCachedEntryIsServedWhateverTheListSaysAndRetryFailedTakesItOff() throws {
        // Cached, and then remembered as failed (by another process, say).
        let url = server.url("photo.jpg")
        #expect(try fetch(["fetch", url]).status == 0)
        try FailedURLStore(namespaceDirectory: namespace).record(CacheKey(url), url: url, reason: "HTTP 404 Not Found", now: Date().timeIntervalSince1970)
        // The list answers misses only: the entry is served, with or without --cache-only.
        let served = try fetch(["fetch", url])
        #expect(served.status == 0 && served.lines.count == 1, "\(served.standardError)")
        #expect(try fetch(["fetch", "--cache-only", url]).status == 0)
        let retried = try fetch(["--json", "fetch", "--retry-failed", url])
        #expect(try retried.jsonLines().first?["cache"] as? String == "disk")
        #expect(records.isEmpty)
        #expect(try fetch(["fetch", url]).status == 0)
        #expect(server.requestCount("photo.jpg") == 1)
    }

    @Test func aLoginPageServedToARequestWithoutCookiesDoesNotBlockOneWithThem() throws {
        let url = faults.baseURL + "/login/photo.jpg"
        let anonymous = try fetch(["fetch", url])
        #expect(anonymous.status == 1 && anonymous.standardError.contains("not an image"), "\(anonymous.standardError)")
        #expect(try fetch(["fetch", url]).standardError.contains("--retry-failed"))
        #expect(faults.requestCount(path: "/login/photo.jpg") == 1)

        // Another request: cookies from a jar (as a browser export writes it), and a header.
        let jar = home.appending("cookies.txt")
        try "127.0.0.1\tFALSE\t/\tFALSE\t0\tsession\tstale\n".write(toFile: jar, atomically: false, encoding: .utf8)
        let wrong = try fetch(["fetch", "--cookies", jar, url])
        #expect(wrong.status == 1 && wrong.standardError.contains("not an image"))
        #expect(faults.requestCount(path: "/login/photo.jpg") == 2)
        // Both failures are kept, one per request: neither asks again.
        #expect(try fetch(["fetch", url]).standardError.contains("--retry-failed"))
        #expect(try fetch(["fetch", "--cookies", jar, url]).standardError.contains("--retry-failed"))
        #expect(faults.requestCount(path: "/login/photo.jpg") == 2)
        // A new login changes the jar: a new request.
        try "127.0.0.1\tFALSE\t/\tFALSE\t0\tsession\ts3cr3t\n".write(toFile: jar, atomically: false, encoding: .utf8)
        let loggedIn = try fetch(["fetch", "--cookies", jar, url])
        #expect(loggedIn.status == 0, "\(loggedIn.standardError)")
        // A success forgets every failure of the URL.
        #expect(records.isEmpty)
        #expect(try failedCount() == 0)
    }

    @Test func theTTLDecidesWhenAFailureIsTriedAgain() throws {
        let url = server.url("status/404")
        #expect(try fetch(["fetch", url]).status == 1)
        try ageRecords(by: 2 * 3600)
        // Two hours old: within the default day, outside --failed-ttl 1h.
        #expect(try fetch(["fetch", url]).standardError.contains("--retry-failed"))
        #expect(server.requestCount("status/404") == 1)
        #expect(try fetch(["fetch", "--failed-ttl", "1h", url]).standardError.contains("HTTP 404 Not Found"))
        #expect(server.requestCount("status/404") == 2)

        // A day and more: tried again by default, but not with 'never'.
        try ageRecords(by: 25 * 3600)
        #expect(try fetch(["fetch", "--failed-ttl", "never", url]).standardError.contains("not tried again until the failed list is cleared"))
        #expect(server.requestCount("status/404") == 2)
        #expect(try fetch(["fetch", url]).standardError.contains("HTTP 404 Not Found"))
        #expect(server.requestCount("status/404") == 3)
    }

    @Test func cleanPrunesExpiredFailuresUnderTheRememberedTTL() throws {
        #expect(try fetch(["fetch", server.url("status/404"), server.url("status/410")]).status == 1)
        try ageRecords(by: 3 * 86_400)
        // A remembered 'never' keeps them, for clean and for fetch alike.
        let kept = try fetch(["--json", "clean", "--failed-ttl", "never", "--remember"])
        #expect(try kept.jsonLines().first?["removed_failed_urls"] as? Int == 0)
        #expect(try fetch(["fetch", server.url("status/404")]).standardError.contains("--retry-failed"))
        let info = try #require(try fetch(["--json", "cache-info"]).jsonLines().first)
        #expect(info["failed_urls"] as? Int == 2 && info["failed_ttl_source"] as? String == "remembered")
        // The default day removes them.
        let pruned = try fetch(["--json", "clean", "--failed-ttl", "1d"])
        #expect(try pruned.jsonLines().first?["removed_failed_urls"] as? Int == 2)
        #expect(records.isEmpty)
    }

    @Test func transientFailuresAreNotRemembered() throws {
        let port = try NginxServer.freePort()
        let transient = [faults.baseURL + "/status/503", faults.baseURL + "/status/429", faults.baseURL + "/status/408",
                         faults.baseURL + "/stall", "http://127.0.0.1:\(port)/a.png"]
        for _ in 0..<2 {
            let result = try fetch(["fetch", "--timeout", "0.3"] + transient)
            #expect(result.status == 1)
            #expect(!result.standardError.contains("--retry-failed"))
        }
        #expect(records.isEmpty)
        // Each was tried both times.
        #expect(faults.requestCount(path: "/status/503") == 2 && faults.requestCount(path: "/stall") == 2)
        // Not on the list (`list --failed` shows none), but kept to say why: an export's manifest gives each
        // row its failure, as tried again by the next prefetch.
        #expect(CacheInspection.retriedRecords(inNamespace: namespace).count == transient.count)
        #expect(try fetch(["list", "--failed"]).output.isEmpty)
        let list = home.appending("transient.txt")
        try Data((transient.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: list))
        let out = home.appending("set")
        #expect(try fetch(["export", "--webdataset", out, list]).status == 1)
        let rows = try String(contentsOfFile: out + "/manifest.jsonl", encoding: .utf8).split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(rows.map { "\($0["status"] ?? "")/\($0["reason"] ?? "")" } == Array(repeating: "failed/failed_retryable", count: transient.count))
        #expect((rows[0]["error"] as? String)?.contains("503") == true && (rows[0]["error"] as? String)?.contains("tries it again") == true,
                "\(rows[0])")
    }

    @Test func clearFailedForgetsThem() throws {
        #expect(try fetch(["fetch", server.url("status/404")]).status == 1)
        #expect(try fetch(["clear", "--failed"]).status == 0)
        #expect(records.isEmpty)
        #expect(try fetch(["fetch", server.url("status/404")]).standardError.contains("HTTP 404 Not Found"))
        #expect(server.requestCount("status/404") == 2)
    }

    @Test func concurrentProcessesRecordWholeFailures() throws {
        let urls = (0..<20).map { server.url("status/404?n=\($0)") }
        let processes = try (0..<4).map { _ in try ImgCacheProcess.start(["--cache-dir", cacheRoot, "fetch", "-j", "4"] + urls, home: home.path) }
        for process in processes {
            process.waitUntilExit()
            #expect(process.terminationStatus == 1)
        }
        #expect(records.count == 20)
        for record in records {
            let text = try String(contentsOfFile: namespace + "/failed/" + record, encoding: .utf8)
            #expect(text.hasPrefix("imgcache-failed 2\nurl http://127.0.0.1:"), "\(text)")
            #expect(text.split(separator: "\n").last?.hasPrefix("failure ") == true, "\(text)")
            #expect(text.hasSuffix(" HTTP 404 Not Found\n"), "\(text)")
        }
        #expect(CacheInspection.temporaryFiles(under: cacheRoot).isEmpty)
    }
}
