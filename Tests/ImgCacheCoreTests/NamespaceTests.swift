import ImgCacheCore
import Testing

@Suite struct NamespaceTests {
    @Test(arguments: ["default", "thumbs", "a", "project-1", "v1.2_x", String(repeating: "n", count: 64)])
    func acceptsPlainNames(name: String) throws {
        #expect(try Namespace(validating: name).name == name)
    }

    @Test func refusesPathsAndOddNames() {
        #expect(throws: Namespace.ValidationError.empty) { try Namespace(validating: "") }
        #expect(throws: Namespace.ValidationError.leadingDot) { try Namespace(validating: "..") }
        #expect(throws: Namespace.ValidationError.leadingDot) { try Namespace(validating: "../x") }
        #expect(throws: Namespace.ValidationError.leadingDash) { try Namespace(validating: "-x") }
        #expect(throws: Namespace.ValidationError.invalidCharacter("/")) { try Namespace(validating: "a/b") }
        #expect(throws: Namespace.ValidationError.invalidCharacter("é")) { try Namespace(validating: "café") }
        #expect(throws: Namespace.ValidationError.tooLong(65)) { try Namespace(validating: String(repeating: "n", count: 65)) }
    }
}
