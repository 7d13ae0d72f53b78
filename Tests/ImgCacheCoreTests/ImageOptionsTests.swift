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
