import Foundation
import Testing

/// Docs/ARCHITECTURE.md's list of source files is the tree as it is: every
/// file under Sources/ is named there, and every file named there exists.
@Suite struct ArchitectureDocumentTests {
    static let repository = GeneratedFilesTests.repository

    /// The fenced block under "## Source files".
    func fileList() throws -> String {
        let text = try String(contentsOf: Self.repository.appendingPathComponent("Docs/ARCHITECTURE.md"), encoding: .utf8)
        let section = try #require(text.components(separatedBy: "## Source files").dropFirst().first)
        return try #require(section.components(separatedBy: "```").dropFirst().first)
    }

    /// Every source file's path under Sources/, skipping the system-library
    /// folders, which hold only a module map and a header each.
    func sourceFiles() throws -> [String] {
        let sources = Self.repository.appendingPathComponent("Sources").path
        let all = try #require(FileManager.default.enumerator(atPath: sources)?.allObjects as? [String])
        return all.filter { path in
            [".swift", ".c", ".h"].contains { path.hasSuffix($0) } && !["CCurl/", "COpenSSL/", "CPNG/", "CJPEG/", "CWebP/", "CGIF/"]
                .contains { path.hasPrefix($0) }
        }.sorted()
    }

    /// The file names the list names (each word's last path component).
    func listedNames() throws -> Set<String> {
        Set(try fileList().split(whereSeparator: \.isWhitespace).map { word in
            String(word.split(separator: "/").last ?? "")
        }.filter { $0.hasSuffix(".swift") || $0.hasSuffix(".c") || ($0.hasSuffix(".h") && $0 != "shim.h") })
    }

    @Test func everySourceFileIsListed() throws {
        let listed = try listedNames()
        for path in try sourceFiles() {
            let name = String(path.split(separator: "/").last ?? "")
            #expect(listed.contains(name), "\(path) is missing from Docs/ARCHITECTURE.md")
        }
    }

    @Test func everyListedFileExists() throws {
        let names = Set(try sourceFiles().map { String($0.split(separator: "/").last ?? "") })
        let listed = try listedNames()
        #expect(!listed.isEmpty)
        for name in listed.sorted() {
            #expect(names.contains(name), "Docs/ARCHITECTURE.md lists \(name), which is not in Sources/")
        }
    }
}
