import Foundation
import Testing

/// Servers that break HTTP's rules: each case ends in a typed error (or a
/// clean result), nothing partial is stored, and nothing hangs.
@Suite final class HostileServerTests: FaultServerSuite {
    var namespace: String { cacheRoot + "/default" }

    func expectRefused(_ path: String, messageContains text: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let result = try fetch(["fetch", "--timeout", "5", faults.baseURL + path])
        #expect(result.status == 1, "\(path): \(result.standardError)", sourceLocation: sourceLocation)
        #expect(result.standardError.contains(text), "\(path): \(result.standardError)", sourceLocation: sourceLocation)
        #expect(CacheInspection.storedFiles(under: namespace).filter { !$0.hasPrefix("failed/") }.isEmpty, sourceLocation: sourceLocation)
        #expect(CacheInspection.temporaryFiles(under: cacheRoot).isEmpty, sourceLocation: sourceLocation)
    }

    @Test func enormousHeadersAndHeaderFloods() throws {
        try expectRefused("/huge-headers/logo.png", messageContains: "/huge-headers/logo.png: header too large")
        try expectRefused("/header-flood/photo.jpg", messageContains: "/header-flood/photo.jpg: ")
    }

    @Test func contentLengthLiesBothWays() throws {
        try expectRefused("/length-long/photo.jpg", messageContains: "/length-long/photo.jpg: ")
        // Half the body taken as the whole: caught as a cut file, not stored as one.
        try expectRefused("/length-short/photo.jpg", messageContains: "truncated JPEG image")
    }

    @Test func aGzipBombIsRefusedFromItsFirstBytes() throws {
        // Decoded, its first bytes are zeros: no image's.
        try expectRefused("/gzip-bomb/logo.png", messageContains: "not an image")
    }

    @Test func aGzipBombBehindAnImageHeaderIsCutAsItInflates() throws {
        try expectRefused("/gzip-image-bomb/logo.png", messageContains: "grew more than 200 times as its Content-Encoding (gzip) was decoded")
    }

    @Test func brokenChunkedEncoding() throws {
        try expectRefused("/bad-chunked/logo.png", messageContains: "/bad-chunked/logo.png: ")
    }

    @Test func redirectChainsAtAndOverTheLimit() throws {
        let atLimit = try fetch(["fetch", "--max-redirects", "3", faults.baseURL + "/redirect/3/logo.png"])
        #expect(atLimit.status == 0, "\(atLimit.standardError)")
        let over = try fetch(["fetch", "--max-redirects", "3", faults.baseURL + "/redirect/4/photo.jpg"])
        #expect(over.status == 1)
        #expect(over.standardError.contains("more than 3 redirects"), "\(over.standardError)")
        let one = try fetch(["fetch", "--max-redirects", "1", faults.baseURL + "/redirect/2/photo.jpg"])
        #expect(one.standardError.contains("more than 1 redirect;") || one.standardError.hasSuffix("more than 1 redirect\n"),
                "\(one.standardError)")
    }
}
