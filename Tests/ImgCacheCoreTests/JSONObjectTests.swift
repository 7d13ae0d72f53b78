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

    /// A number goes on as written wherever no Int64 or Double gives it back the same.
    @Test func numbersNoIntegerOrDoubleHoldAreKeptAsWritten() throws {
        for text in ["18446744073709551615", "-99999999999999999999", "1e400", "1e5", "123456789012345678901234567890", "0.1e1", "-0"] {
            #expect(try JSONParser.parse(Array(text.utf8)).serialized == text, "\(text)")
        }
        #expect(try JSONParser.parse(Array("-5".utf8)) == .integer(-5))
        #expect(try JSONParser.parse(Array("0.5".utf8)) == .number(0.5))
    }
}
