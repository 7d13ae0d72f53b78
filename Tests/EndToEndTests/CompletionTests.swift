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

    /// Runs `shell -c program` and returns its standard output lines.
    func run(_ shell: String, _ program: String) throws -> [String] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: shell)
        process.arguments = ["-c", program]
        process.environment = ["PATH": "/usr/bin:/bin", "HOME": "/nonexistent"]
        process.currentDirectoryURL = Paths.repository
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text.split(separator: "\n").map(String.init)
    }

    @Test func fishCompletesCommandsOptionsAndValues() throws {
        let lines = try run("/usr/bin/fish", """
            source completions/imgcache.fish
            complete -C 'imgcache pre'
            complete -C 'imgcache fetch --thumb'
            complete -C 'imgcache prefetch --verify '
            """)
        let words = lines.map { String($0.prefix { $0 != "\t" }) }
        #expect(words.contains("prefetch"), "\(lines)")
        #expect(words.contains("--thumbnail"), "\(lines)")
        #expect(words.contains("header") && words.contains("full"), "\(lines)")
    }

    @Test func zshLoadsTheCompletionFunction() throws {
        let lines = try run("/usr/bin/zsh", """
            zsh -n completions/_imgcache && echo syntax-ok
            fpath=(completions $fpath); autoload -U compinit; compinit -u -D; whence -w _imgcache
            """)
        #expect(lines.contains("syntax-ok"), "\(lines)")
        #expect(lines.contains("_imgcache: function"), "\(lines)")
    }
}
