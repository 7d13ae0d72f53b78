import ImgCacheCLI
import ImgCacheCore
import Testing

@Suite struct SuggestionTests {
    @Test func distanceCountsAdjacentSwapsAsOneEdit() {
        #expect(Suggestion.distance("fetch", "fecth") == 1)
        #expect(Suggestion.distance("", "abc") == 3)
        #expect(Suggestion.distance("kitten", "sitting") == 3)
    }

    @Test func aUniquePrefixIsSuggested() {
        #expect(Suggestion.closest(to: "cache", among: ["cache-dir", "namespace"]) == "cache-dir")
        #expect(Suggestion.closest(to: "c", among: ["cache-dir", "color"]) == nil)
        #expect(Suggestion.closest(to: "retry", among: ["retries", "retry-failed", "refresh"]) == "retries")
        #expect(Suggestion.closest(to: "thumb", among: ["thumbnail", "timeout"]) == "thumbnail")
    }
}
