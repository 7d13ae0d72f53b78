import Foundation

/// Locations in the repository and the build, found from this file's path.
enum Paths {
    /// The repository root.
    static let repository: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// Committed fixture images.
    static let fixtures = repository.appendingPathComponent("Tests/Fixtures/images")

    /// The imgcache binary under test: $IMGCACHE_BIN, else the one built beside
    /// the test bundle by `swift build`.
    static let binary: String = {
        if let explicit = ProcessInfo.processInfo.environment["IMGCACHE_BIN"], !explicit.isEmpty { return explicit }
        let besideTests = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("imgcache").path
        if FileManager.default.isExecutableFile(atPath: besideTests) { return besideTests }
        return repository.appendingPathComponent(".build/debug/imgcache").path
    }()

    /// Bytes of a fixture file.
    static func fixture(_ name: String) throws -> Data {
        try Data(contentsOf: fixtures.appendingPathComponent(name))
    }
}
