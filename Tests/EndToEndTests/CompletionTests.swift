import Foundation
import Testing

/// The generated bash completion, driven the way bash drives it.
@Suite struct CompletionTests {
    /// What `_imgcache` offers for the words typed so far (the last one being completed).
    func complete(_ words: [String], cacheRoot: String? = nil) throws -> [String] {
        let script = Paths.repository.appendingPathComponent("completions/imgcache.bash").path
        let quoted = (["imgcache"] + words).map { "'\($0)'" }.joined(separator: " ")
        let program = """
            source '\(script)'
            COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count)
            _imgcache
            printf '%s\\n' "${COMPREPLY[@]}"
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", program]
        var environment = ["PATH": "/usr/bin:/bin", "HOME": "/nonexistent"]
        if let cacheRoot { environment["IMGCACHE_DIR"] = cacheRoot }
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text.split(separator: "\n").map(String.init)
    }

    @Test func commandsOptionsAndValuesComplete() throws {
        #expect(try complete(["fe"]) == ["fetch"])
        #expect(try complete(["c"]).sorted() == ["cache-info", "clean", "clear", "completions"])
        #expect(try complete(["fetch", "--out"]) == ["--output"])
        #expect(try complete(["--color", ""]) == ["auto", "always", "never"])
        #expect(try complete(["completions", ""]) == ["bash", "zsh", "fish"])
        #expect(try complete(["--js"]) == ["--json"])
    }

    @Test func namespacesCompleteFromTheCacheFolder() throws {
        let root = try TemporaryDirectory()
        for name in ["thumbs", "avatars"] { try FileManager.default.createDirectory(atPath: root.appending(name), withIntermediateDirectories: true) }
        #expect(try complete(["-n", ""], cacheRoot: root.path).sorted() == ["avatars", "thumbs"])
    }
}
