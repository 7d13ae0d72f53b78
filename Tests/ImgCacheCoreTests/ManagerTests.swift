@testable import ImgCacheCore
import Testing

@Suite struct ImageOptionsTests {
    @Test func bitsAreSDWebImages() {
        let expected: [(ImageOptions, Int)] = [
            (.retryFailed, 0), (.lowPriority, 1), (.cacheMemoryOnly, 2), (.progressiveDownload, 3), (.refreshCached, 4),
            (.continueInBackground, 5), (.handleCookies, 6), (.allowInvalidSSLCertificates, 7), (.highPriority, 8),
            (.delayPlaceholder, 9), (.transformAnimatedImage, 10), (.avoidAutoSetImage, 11), (.scaleDownLargeImages, 12),
            (.queryDataWhenInMemory, 13), (.queryDiskSync, 14), (.fromCacheOnly, 15), (.fromLoaderOnly, 16),
        ]
        for (option, bit) in expected { #expect(option.rawValue == 1 << bit) }
        #expect(ImageOptions.named.map(\.option) == expected.map(\.0))
        #expect(ImageOptions.known.rawValue == 0x1FFFF)
    }

    @Test func namesAreReadInEverySpelling() throws {
        for spelling in ["RetryFailed", "retry-failed", "retryfailed", "SDWebImageRetryFailed", "RETRY_FAILED"] {
            #expect(try ImageOptions(parsing: spelling) == .retryFailed, "\(spelling)")
        }
        #expect(try ImageOptions(parsing: "allow-invalid-ssl-certificates") == .allowInvalidSSLCertificates)
        #expect(try ImageOptions(parsing: "retry-failed, refresh-cached") == [.retryFailed, .refreshCached])
    }

    @Test func masksAreDecimalOrHexAndMixWithNames() throws {
        #expect(try ImageOptions(parsing: "17") == [.retryFailed, .refreshCached])
        #expect(try ImageOptions(parsing: "0x11") == [.retryFailed, .refreshCached])
        #expect(try ImageOptions(parsing: "0X8000,high-priority") == [.fromCacheOnly, .highPriority])
        #expect(try ImageOptions(parsing: "0") == [])
    }

    @Test func unknownNamesAndBitsAreRefused() {
        #expect(throws: ImageOptions.ParseError.unknownName("retry-faild")) { try ImageOptions(parsing: "retry-faild") }
        #expect(throws: ImageOptions.ParseError.unknownBits(0x20000)) { try ImageOptions(parsing: "0x30000") }
        #expect(throws: ImageOptions.ParseError.empty) { try ImageOptions(parsing: " , ") }
        #expect(throws: ImageOptions.ParseError.unknownName("0xZZ")) { try ImageOptions(parsing: "0xZZ") }
    }

    @Test func spelledNamesAreWhatTheCLIShows() {
        #expect(ImageOptions.spelled("RetryFailed") == "retry-failed")
        #expect(ImageOptions.spelled("AllowInvalidSSLCertificates") == "allow-invalid-ssl-certificates")
        #expect(ImageOptions([.fromLoaderOnly, .retryFailed]).names == ["RetryFailed", "FromLoaderOnly"])
    }

    @Test func highPriorityWinsOverLow() {
        var settings = FetchSettings()
        #expect(settings.priority == .normal)
        settings.options = [.lowPriority]
        #expect(settings.priority == .low)
        settings.options = [.lowPriority, .highPriority]
        #expect(settings.priority == .high)
    }
}

@Suite struct PixelLimitTests {
    @Test func allowsUpToTheLimitWithoutOverflow() {
        let limit = PixelLimit.standard
        #expect(limit.allows(width: 10_000, height: 10_000))
        #expect(!limit.allows(width: 10_000, height: 10_001))
        #expect(!limit.allows(width: 50_000, height: 50_000))
        #expect(!limit.allows(width: Int.max, height: 2))
    }

    @Test func saysItsSizeInMegapixels() {
        #expect(PixelLimit.standard.description == "100 megapixels")
        #expect(PixelLimit(pixels: 2_500_000).description == "2.5 megapixels")
        #expect(PixelLimit(pixels: 40_000).description == "40000 pixels")
    }
}

@Suite struct FailedURLClassificationTests {
    let url = "http://h/a.png"

    @Test func lastingFailuresAreRemembered() {
        let remembered: [FetchError] = [
            .download(url: url, .unsupportedScheme("file")), .notAnImage(url: url, contentType: "text/html"), .unsupportedFormat(url: url, .tiff),
            .corruptImage(url: url, reason: "bad header"),
            .download(url: url, .httpStatus(404)), .download(url: url, .httpStatus(410)), .download(url: url, .httpStatus(403)),
            .download(url: url, .httpStatus(400)), .download(url: url, .tooLarge(limit: 10)),
        ]
        for error in remembered { #expect(error.isRemembered, "\(error)") }
    }

    @Test func transientAndLocalFailuresAreNot() {
        let forgotten: [FetchError] = [
            .download(url: url, .dns("x")), .download(url: url, .connectionRefused), .download(url: url, .connectionReset),
            .download(url: url, .connectionLost("x")), .download(url: url, .timeout(seconds: 1)),
            .download(url: url, .tlsHandshake("x")), .download(url: url, .httpStatus(500)), .download(url: url, .httpStatus(503)),
            .download(url: url, .httpStatus(408)), .download(url: url, .httpStatus(429)), .download(url: url, .cancelled),
            .download(url: url, .tlsCertificate("x")), .download(url: url, .tooManyRedirects(limit: 2)),
            .interrupted(url: url), .notCached(url: url), .libraryMissing("x"),
            .tooManyPixels(url: url, width: 50_000, height: 50_000, limit: .standard), .notUsable(url: url, reason: "x"),
            .cacheUnwritable(SystemError("write", errno: .noSpace)),
        ]
        for error in forgotten { #expect(!error.isRemembered, "\(error)") }
    }

    @Test func aStringThatIsNoURLIsNotRememberedForNoRequestWasMade() {
        for error: FetchError in [.invalidURL(url: "x", reason: "no scheme"), .unsupportedScheme(url: "ftp://h/a", scheme: "ftp")] {
            #expect(error.rememberedScope(plainRequest: true) == nil, "\(error)")
        }
    }

    @Test func failuresThatDependOnTheRequestAnswerOnlyRequestsLikeIt() {
        for code in [401, 403, 407] {
            let error = FetchError.download(url: url, .httpStatus(code))
            #expect(error.rememberedScope(plainRequest: true) == .plainRequests)
            // With credentials, headers or cookies, the refusal may be theirs: not remembered.
            #expect(error.rememberedScope(plainRequest: false) == nil)
        }
        #expect(FetchError.download(url: url, .httpStatus(404)).rememberedScope(plainRequest: false) == .everyRequest)
        let tooLarge = FetchError.download(url: url, .tooLarge(limit: 1000)).rememberedScope(plainRequest: true)
        #expect(tooLarge == .sizeLimitUpTo(1000))
        #expect(tooLarge?.covers(plainRequest: true, sizeLimit: 1000) == true)
        #expect(tooLarge?.covers(plainRequest: true, sizeLimit: 500) == true)
        #expect(tooLarge?.covers(plainRequest: true, sizeLimit: 2000) == false)
        #expect(tooLarge?.covers(plainRequest: true, sizeLimit: nil) == false)
        #expect(FailedURLStore.Scope.plainRequests.covers(plainRequest: false, sizeLimit: nil) == false)
    }

    @Test func aBlacklistedFailureSaysWhenAndNamesRetryFailed() {
        let now = 1_000_000.0
        let error = FetchError.blacklisted(url: url, reason: "HTTP 404 Not Found", failedAt: now - 3 * 3600,
                                           ttl: .seconds(86_400), now: now)
        #expect(error.message == "http://h/a.png: failed 3 hours ago (HTTP 404 Not Found); not tried again for 21 hours")
        let never = FetchError.blacklisted(url: url, reason: "r", failedAt: now, ttl: .never, now: now)
        #expect(never.message.contains("not tried again until the failed list is cleared"))
    }
}

@Suite struct URLListTests {
    func lines(_ text: String, chunk: Int = 3, limit: Int = 100) -> [LineSplitter.Line] {
        var splitter = LineSplitter(maximumLength: limit)
        let bytes = Array(text.utf8)
        var lines: [LineSplitter.Line] = []
        var start = 0
        while start < bytes.count {
            lines += splitter.push(bytes[start..<min(bytes.count, start + chunk)])
            start += chunk
        }
        return lines + splitter.finish()
    }

    @Test func linesAreSplitAcrossChunksAndNumbered() {
        let found = lines("a\nbb\n\nccc")
        #expect(found.map { String(decoding: $0.bytes, as: UTF8.self) } == ["a", "bb", "", "ccc"])
        #expect(found.map(\.number) == [1, 2, 3, 4])
        #expect(lines("a\n").count == 1)
    }

    @Test func commentsBlanksAndSpacesAreSkippedAndCRLFAccepted() {
        let items = lines("# list\r\n\r\n  http://h/a.png  \r\n\t#indented comment\nhttp://h/b.png#frag").compactMap(URLList.item(for:))
        #expect(items == [.url("http://h/a.png", line: 3), .url("http://h/b.png#frag", line: 5)])
    }

    @Test func anOverlongLineIsRejectedWithoutBeingKept() {
        let long = String(repeating: "x", count: 250)
        let found = lines("http://h/a\n" + long + "\nhttp://h/b\n", chunk: 64, limit: 100)
        #expect(found.map(\.truncated) == [false, true, false])
        #expect(found[1].bytes.count == 100)
        guard case .rejected(_, let line, let reason)? = URLList.item(for: found[1]) else {
            Issue.record("not rejected")
            return
        }
        #expect(line == 2)
        #expect(reason.hasPrefix("longer than"))
    }
}

@Suite struct PrefetchSummaryTests {
    func outcome(_ result: Result<FetchResult, FetchError>?) -> FetchOutcome {
        FetchOutcome(index: 0, url: "u", result: result)
    }

    func fetched(_ type: CacheType) -> Result<FetchResult, FetchError> {
        .success(FetchResult(url: "u", path: "/p", cacheType: type,
                             metadata: EntryMetadata(fileName: "f", inode: 1, byteCount: 1, key: "u", url: "u", storedAt: 0)))
    }

    @Test func eachAnswerIsCountedOnce() {
        var summary = PrefetchSummary()
        for result in [fetched(.none), fetched(.none), fetched(.disk), fetched(.memory), fetched(.refreshed),
                       .failure(.download(url: "u", .httpStatus(503))), .failure(.notAnImage(url: "u", contentType: nil)),
                       .failure(.blacklisted(url: "u", reason: "r", failedAt: 0, ttl: .never, now: 0)),
                       .failure(.interrupted(url: "u")), nil, nil] {
            summary.count(outcome(result))
        }
        #expect(summary.urls == 9)
        #expect(summary.downloaded == 2 && summary.cached == 2 && summary.refreshed == 1)
        #expect(summary.failed == 2 && summary.blacklisted == 1 && summary.interrupted == 1 && summary.repeats == 2)
        #expect(!summary.allCached)
        var good = PrefetchSummary()
        good.count(outcome(fetched(.disk)))
        good.count(outcome(nil))
        #expect(good.allCached)
    }
}
