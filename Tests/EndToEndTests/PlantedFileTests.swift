import Foundation
import Testing

/// Things planted in the cache where entries go.
@Suite final class PlantedFileTests: LoopbackCacheSuite {
    @Test func aFIFOInAnEntrysPlaceIsRemovedNotRead() throws {
        let url = server.url("logo.png")
        let path = try #require(try fetch(["fetch", url]).lines.first)
        try FileManager.default.removeItem(atPath: path)
        #expect(mkfifo(path, 0o644) == 0)
        // Reading a FIFO would block for ever; the lookup sees a damaged entry and fetches again.
        let again = try fetch(["-v", "fetch", url])
        #expect(again.status == 0, "\(again.standardError)")
        #expect(again.standardError.contains("damaged entry"), "\(again.standardError)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Paths.fixture("logo.png"))
        #expect(server.requestCount("logo.png") == 2)
    }
}
