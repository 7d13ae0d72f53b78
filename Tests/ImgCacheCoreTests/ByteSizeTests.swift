@testable import ImgCacheCore
import Testing

@Suite struct ByteSizeTests {
    @Test(arguments: [("4096", 4096), ("0", 0), ("500k", 500_000), ("500K", 500_000), ("500M", 500_000_000),
                      ("2G", 2_000_000_000), ("2GB", 2_000_000_000), ("1.5GiB", 1_610_612_736), ("1Ki", 1024),
                      ("20MiB", 20_971_520), ("1T", 1_000_000_000_000), ("12B", 12), (" 7M ", 7_000_000)])
    func parsesDecimalAndBinaryUnits(text: String, bytes: Int64) throws {
        #expect(try ByteSize(parsing: text).bytes == bytes)
    }

    @Test(arguments: ["", "M", "-5M", "1.5", "1.2.3M", "12X", ".5G", "5.G", "99999999999T", "1e3"])
    func refusesWhatIsNotASize(text: String) {
        #expect(throws: ValueError.self) { try ByteSize(parsing: text) }
    }

    @Test func humanisesWithDecimalUnits() {
        #expect(ByteSize.humanised(512) == "512 B")
        #expect(ByteSize.humanised(84_200_000) == "84.2 MB")
        #expect(ByteSize.humanised(1_000) == "1.0 kB")
        #expect(ByteSize.humanised(999_960) == "1.0 MB")
        #expect(ByteSize.humanised(1_500_000_000_000) == "1.5 TB")
    }
}
