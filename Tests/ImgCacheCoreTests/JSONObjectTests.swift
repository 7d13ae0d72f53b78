@testable import ImgCacheCore
import Testing

@Suite struct JSONObjectTests {
    @Test func escapesAndKeepsFieldOrder() {
        var object = JSONObject()
        object.add("b", "q\"uo\\te\n\u{1}")
        object.add("a", 5 as Int?)
        object.add("n", nil as String?)
        object.add("t", true)
        #expect(object.serialized == #"{"b":"q\"uo\\te\n\u0001","a":5,"n":null,"t":true}"#)
    }
}
