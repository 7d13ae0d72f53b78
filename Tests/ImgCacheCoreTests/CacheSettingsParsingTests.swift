import Foundation
import ImgCacheCore
import Testing

@Suite struct CacheSettingsParsingTests {
    @Test(arguments: [
        ("strip-query", "https://cdn.test/a.png?sig=1&w=2#frag", "https://cdn.test/a.png"),
        ("keep-query=w,h", "https://cdn.test/a.png?sig=1&w=2&h=3&x", "https://cdn.test/a.png?w=2&h=3"),
        ("drop-query=sig, expires", "https://cdn.test/a.png?sig=1&w=2&expires=9", "https://cdn.test/a.png?w=2"),
        ("drop-query=sig", "https://cdn.test/a.png?sig=1", "https://cdn.test/a.png"),
        ("none", "https://cdn.test/a.png?sig=1#f", "https://cdn.test/a.png?sig=1"),
        // Kept parameters in the filter's order, whatever the URL's; the rest sorted by name.
        ("keep-query=w,h", "https://cdn.test/a.png?h=2&w=1", "https://cdn.test/a.png?w=1&h=2"),
        ("keep-query=w,h", "https://cdn.test/a.png?w=1&h=2", "https://cdn.test/a.png?w=1&h=2"),
        ("keep-query=w,w", "https://cdn.test/a.png?w=1", "https://cdn.test/a.png?w=1"),
        ("drop-query=sig", "https://cdn.test/a.png?w=1&sig=x&h=2&a=3&a=0", "https://cdn.test/a.png?a=3&a=0&h=2&w=1"),
    ])
    func keyFilters(filter: String, url: String, key: String) throws {
        #expect(try #require(CacheKeyFilter(parsing: filter)).key(for: url) == key)
    }

    @Test(arguments: ["", "strip", "keep-query", "keep-query=", "keep-query=a,,b", "strip-query=x", "none=1"])
    func badKeyFiltersAreRefused(text: String) {
        #expect(CacheKeyFilter(parsing: text) == nil)
    }

    @Test func sizeAndAgeLimits() throws {
        #expect(try SizeLimit(parsing: "500M") == .bytes(500_000_000))
        #expect(try SizeLimit(parsing: "1.5GiB") == .bytes(1_610_612_736))
        #expect(try SizeLimit(parsing: "none") == .unlimited)
        #expect(try AgeLimit(parsing: "2w") == .seconds(1_209_600))
        #expect(try AgeLimit(parsing: "1mo") == .seconds(2_592_000) && (try AgeLimit(parsing: "1y")) == .seconds(31_536_000))
        #expect(try AgeLimit(parsing: "never") == .never)
        for bad in ["0", "-1", "12X", "", "lots"] { #expect(throws: ValueError.self) { try SizeLimit(parsing: bad) } }
        for bad in ["0", "7q", "", "soon"] { #expect(throws: ValueError.self) { try AgeLimit(parsing: bad) } }
    }
}
