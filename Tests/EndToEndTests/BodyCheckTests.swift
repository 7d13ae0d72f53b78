import Foundation
import Testing

/// A body is checked as it arrives: one that can be no image, or whose header
/// announces too many pixels, is abandoned at its first bytes, not downloaded
/// to its end (the fault server's bodies here never end).
@Suite final class BodyCheckTests: FaultServerSuite {
    var namespace: String { cacheRoot + "/default" }

    @Test func anEndlessHTMLPageIsRefusedAtItsFirstBytes() throws {
        // Read to its end, this body would be cut at the size limit instead.
        let url = faults.baseURL + "/endless-html"
        let result = try fetch(["fetch", "--max-size", "2G", url])
        #expect(result.status == 1)
        #expect(result.standardError.contains("\(url): not an image (served as text/html); nothing was stored"), "\(result.standardError)")
        #expect(CacheInspection.storedFiles(under: cacheRoot).isEmpty)
        #expect(CacheInspection.temporaryFiles(under: cacheRoot).isEmpty)
        // Remembered, as a whole HTML page would be.
        #expect(CacheInspection.failedRecords(inNamespace: namespace).count == 1)
    }

    @Test func anEndlessBodyWhoseHeaderAnnouncesTooManyPixelsIsRefusedAtOnce() throws {
        let url = faults.baseURL + "/endless-bomb"
        let result = try fetch(["fetch", "--max-size", "2G", url])
        #expect(result.status == 1)
        #expect(result.standardError.contains("50000×50000 pixels is over the limit of 100 megapixels (--max-pixels)"), "\(result.standardError)")
        #expect(CacheInspection.storedFiles(under: cacheRoot).isEmpty)
        // It depends on this run's --max-pixels: not remembered.
        #expect(CacheInspection.failedRecords(inNamespace: namespace).isEmpty)
    }

    @Test func anUnknownFormatIsRefusedFromItsFirstBytes() throws {
        for (name, said) in [("unknown", "not an image")] {
            let result = try fetch(["fetch", faults.baseURL + "/huge/" + name])
            #expect(result.status == 1 && result.standardError.contains(said), "\(name): \(result.standardError)")
            // Of 30 MB, no more than the first 2 MB went out before imgcache hung up.
            #expect(faults.bodyBytes(path: "/huge/" + name) <= 2 << 20, "\(name): \(faults.bodyBytes(path: "/huge/" + name)) bytes")
            #expect(CacheInspection.storedFiles(under: cacheRoot).isEmpty)
        }
    }
}
