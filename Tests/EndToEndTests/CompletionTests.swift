import Foundation
import Testing

/// The generated completion scripts, each driven by its own shell the way a
/// user's Tab drives it: bash through COMP_WORDS and `_imgcache`, fish through
/// `complete -C`, zsh through a pseudo-terminal (zpty) where Tab runs the real
/// completion system. Each runs in a folder of its own holding `urls.txt`.
@Suite final class CompletionTests {
    let folder: TemporaryDirectory

    init() throws {
        folder = try TemporaryDirectory("imgcache-completion")
        try "http://127.0.0.1/a.png\n".write(toFile: folder.appending("urls.txt"), atomically: false, encoding: .utf8)
    }

    /// Runs `shell args...` in the test folder; its stdout and stderr lines.
    func run(_ shell: String, _ arguments: [String], environment: [String: String] = [:]) throws -> [String] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: shell)
        process.arguments = arguments
        process.environment = ["PATH": "/usr/bin:/bin", "HOME": folder.path, "TERM": "xterm"].merging(environment) { $1 }
        process.currentDirectoryURL = folder.url
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text.split(separator: "\n").map(String.init)
    }

    func script(_ name: String) -> String { Paths.repository.appendingPathComponent("completions/" + name).path }

    // MARK: - bash

    /// What `_imgcache` offers for the words typed so far (the last one being
    /// completed), and the `compopt` options it asked for.
    func bash(_ words: [String], cacheRoot: String? = nil) throws -> (words: [String], compopt: [String]) {
        let quoted = (["imgcache"] + words).map { "'\($0)'" }.joined(separator: " ")
        let program = """
            source '\(script("imgcache.bash"))'
            compopt() { echo "COMPOPT $*"; }
            COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count)
            _imgcache
            printf '%s\\n' "${COMPREPLY[@]}"
            """
        let lines = try run("/bin/bash", ["-c", program], environment: cacheRoot.map { ["IMGCACHE_DIR": $0] } ?? [:])
        return (lines.filter { !$0.hasPrefix("COMPOPT ") }, lines.filter { $0.hasPrefix("COMPOPT ") })
    }

    @Test func bashCompletesCommandsOptionsAndValues() throws {
        #expect(try bash(["fe"]).words == ["fetch"])
        #expect(try bash(["c"]).words.sorted() == ["cache-info", "clean", "clear", "completions", "config"])
        #expect(try bash(["fetch", "--out"]).words == ["--output", "--output-dir"])
        #expect(try bash(["--color", ""]).words == ["auto", "always", "never"])
        #expect(try bash(["completions", ""]).words == ["bash", "zsh", "fish"])
        #expect(try bash(["--js"]).words == ["--json"])
        #expect(try bash(["fetch", "--with"]).words == ["--with-url"])
    }

    @Test func bashCompletesAValueAfterEqualsAndTheLastItemOfAList() throws {
        // bash splits --refresh=st into '--refresh', '=', 'st'.
        #expect(try bash(["fetch", "--refresh", "=", ""]).words == ["stale"])
        #expect(try bash(["fetch", "--refresh", "=", "st"]).words == ["stale"])
        #expect(try bash(["fetch", "--format", "webp,a"]).words == ["webp,avif"])
        #expect(try bash(["fetch", "--format", "webp,"]).words.count == 6)
        #expect(try bash(["fetch", "--format", "webp,"]).words.allSatisfy { $0.hasPrefix("webp,") })
        #expect(try bash(["fetch", "--format", "jp"]).words == ["jpeg"])
        #expect(try bash(["fetch", "--options", "retry-failed,refresh-c"]).words == ["retry-failed,refresh-cached"])
    }

    @Test func bashCompletesPrefetchsFileAndInputFiles() throws {
        #expect(try bash(["prefetch", "ur"]).words == ["urls.txt"])
        #expect(try bash(["fetch", "-i", "ur"]).words == ["urls.txt"])
        // A value that is not a file name (a timeout) offers no files.
        #expect(try bash(["fetch", "--timeout", "ur"]).words.isEmpty)
    }

    @Test func bashAddsNoSpaceAfterAKeyFilterThatTakesNames() throws {
        let keep = try bash(["fetch", "--key-filter", "keep"])
        #expect(keep.words == ["keep-query="])
        #expect(keep.compopt.contains("COMPOPT -o nospace"))
        let strip = try bash(["fetch", "--key-filter", "strip"])
        #expect(strip.words == ["strip-query"])
        #expect(!strip.compopt.contains("COMPOPT -o nospace"))
    }

    @Test func bashCompletesNamespacesFromTheCacheFolder() throws {
        let root = try TemporaryDirectory()
        try markedNamespaces(["thumbs", "avatars"], in: root.path)
        // Another program's folder under the root is no namespace.
        try FileManager.default.createDirectory(atPath: root.appending("notours"), withIntermediateDirectories: true)
        #expect(try bash(["-n", ""], cacheRoot: root.path).words.sorted() == ["avatars", "thumbs"])
        // The --cache-dir given earlier on the line names the root, in either spelling.
        let other = try TemporaryDirectory()
        try markedNamespaces(["team"], in: other.path)
        #expect(try bash(["--cache-dir", other.path, "-n", ""], cacheRoot: root.path).words == ["team"])
        #expect(try bash(["--cache-dir=" + other.path, "fetch", "--namespace", "t"], cacheRoot: root.path).words == ["team"])
        // As bash splits them at '=': --cache-dir = DIR, and --namespace = VALUE.
        #expect(try bash(["--cache-dir", "=", other.path, "-n", ""], cacheRoot: root.path).words == ["team"])
        #expect(try bash(["--namespace", "=", ""], cacheRoot: root.path).words.sorted() == ["avatars", "thumbs"])
        // A folder typed with quotes or an escaped space.
        let spaced = try TemporaryDirectory("imgcache completion")
        try markedNamespaces(["crew"], in: spaced.path)
        #expect(try bash(["--cache-dir", "\"" + spaced.path + "\"", "-n", ""], cacheRoot: root.path).words == ["crew"])
        #expect(try bash(["--cache-dir", spaced.path.replacingOccurrences(of: " ", with: "\\ "), "-n", ""], cacheRoot: root.path).words == ["crew"])
    }

    @Test func aFolderNamedLikeACommandRunsNothingInAnyShell() throws {
        // On a shared cache any member can make folders: their names must never be run.
        let root = try TemporaryDirectory("imgcache-hostile-root")
        try markedNamespaces(["good", "$(touch pwned)", "`touch pwned2`", "a b", "-n"], in: root.path)
        #expect(try bash(["--cache-dir", root.path, "-n", ""]).words == ["good"])
        for group in try fish(["imgcache --cache-dir \(root.path) -n "]) { #expect(group == ["good"], "\(group)") }
        #expect(try zsh("--cache-dir \(root.path) -n ").offered == ["good"])
        let left = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(!left.contains("pwned") && !left.contains("pwned2"), "\(left)")
    }

    // MARK: - fish

    /// What fish offers for each command line (`complete -C`), by line.
    func fish(_ lines: [String]) throws -> [[String]] {
        let program = (["source '\(script("imgcache.fish"))'"] + lines.map { "complete -C '\($0)'; echo __END__" })
            .joined(separator: "\n")
        var groups: [[String]] = [[]]
        for line in try run("/usr/bin/fish", ["-c", program]) {
            if line == "__END__" { groups.append([]) } else { groups[groups.count - 1].append(String(line.prefix { $0 != "\t" })) }
        }
        return Array(groups.dropLast())
    }

    @Test func fishCompletesCommandsOptionsValuesAndFiles() throws {
        let groups = try fish(["imgcache pre", "imgcache fetch --thumb", "imgcache prefetch --verify ",
                               "imgcache prefetch ur", "imgcache fetch -i ur", "imgcache fetch --timeout "])
        #expect(groups.count == 6)
        guard groups.count == 6 else { return }
        #expect(groups[0].contains("prefetch"), "\(groups[0])")
        #expect(groups[1].contains("--thumbnail"), "\(groups[1])")
        #expect(groups[2].contains("header") && groups[2].contains("full"), "\(groups[2])")
        #expect(groups[3] == ["urls.txt"], "\(groups[3])")
        #expect(groups[4] == ["-iurls.txt"] || groups[4] == ["urls.txt"], "\(groups[4])")
        #expect(groups[5].isEmpty, "\(groups[5])")
    }

    /// After each value fish shows a word of the value's, not the option's whole help.
    @Test func fishDescribesEachValueShortly() throws {
        let program = "source '\(script("imgcache.fish"))'\ncomplete -C 'imgcache prefetch --verify '"
        let offered = try run("/usr/bin/fish", ["-c", program])
        #expect(offered.sorted() == ["full\tevery pixel of every frame decoded", "header\theader and end checked (default)"], "\(offered)")
    }

    @Test func fishCompletesTheNamespacesOfTheCacheFolderGiven() throws {
        let root = try TemporaryDirectory("imgcache-fish-root")
        try markedNamespaces(["crew", "gallery"], in: root.path)
        try FileManager.default.createDirectory(atPath: root.appending("notours"), withIntermediateDirectories: true)
        let groups = try fish(["imgcache --cache-dir \(root.path) -n ", "imgcache --cache-dir=\(root.path) fetch --namespace "])
        #expect(groups.count == 2)
        for group in groups { #expect(group.sorted() == ["crew", "gallery"], "\(group)") }
    }

    // MARK: - zsh

    /// Types `imgcache WORDS<Tab>` in an interactive zsh on a pseudo-terminal
    /// (zpty) with the completion system loaded, and returns what Tab offered
    /// (every `compadd`, recorded) and what the terminal showed. Waits are
    /// bounded by count.
    func zsh(_ words: String, sourced: Bool = false) throws -> (offered: [String], screen: String) {
        // Each call its own files: the cases of a parameterized test run at once.
        let unique = UUID().uuidString
        let hits = folder.appending("zsh-hits-\(unique)")
        let functions = folder.appending("zsh-functions-\(unique)")
        try FileManager.default.createDirectory(atPath: functions, withIntermediateDirectories: true)
        try? FileManager.default.removeItem(atPath: functions + "/_imgcache")
        try FileManager.default.copyItem(atPath: script("_imgcache"), toPath: functions + "/_imgcache")
        let driver = """
            zmodload zsh/zpty
            : > '\(hits)'
            typeset screen=""
            await() { local chunk i; for i in {1..500}; do if zpty -rt z chunk; then screen+=$chunk; [[ $screen == *$1* ]] && return 0; else sleep 0.02; fi; done; return 1 }
            zpty z zsh -f -i
            zpty -w z "PROMPT='READY> '; \(sourced ? "" : "fpath=('\(functions)' \\$fpath); ")autoload -U compinit; compinit -u -D\(sourced ? "; source <(cat '\(script("_imgcache"))')" : "")"
            await 'READY> ' || exit 3; screen=""
            zpty -w z 'compadd() { if (( ${@[(I)-[OAD]]} )); then builtin compadd "$@"; return; fi; local -a h; builtin compadd -O h "$@"; print -rl -- $h >> \(hits); builtin compadd "$@"; }'
            await 'READY> ' || exit 4; screen=""
            zpty -w -n z $'imgcache '"$1"$'\\t'
            # Under load the line may be cleared before Tab's completion ran: wait (bounded) for its first offer.
            for i in {1..500}; do [[ -s '\(hits)' ]] && break; sleep 0.02; done
            zpty -w z $'\\C-u print __DO""NE__'
            await '__DONE__' || exit 5
            zpty -d z
            print -r -- "$screen"
            """
        let screen = try run("/usr/bin/zsh", ["-f", "-c", driver, "driver", words]).joined(separator: "\n")
        let offered = ((try? String(contentsOfFile: hits, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        return (Array(Set(offered)).sorted(), screen)
    }

    @Test(arguments: [
        ("fetch --thum", ["--thumbnail"]),
        ("fetch --with", ["--with-url"]),
        ("prefetch --verify ", ["full", "header"]),
        ("fetch --key-filter ", ["drop-query=", "keep-query=", "none", "strip-query"]),
        ("completions ", ["bash", "fish", "zsh"]),
        ("prefetch ur", ["urls.txt"]),
        ("fetch -i ur", ["urls.txt"]),
        ("-v -v fetch --scale-d", ["--scale-down"]),
        ("fetch -H 'X: y' -u me:pw --max-red", ["--max-redirects"]),
    ])
    func zshCompletesWithoutErrors(words: String, expected: [String]) throws {
        let result = try zsh(words)
        #expect(!result.screen.contains("_arguments") && !result.screen.contains("invalid"), "\(result.screen)")
        #expect(result.offered == expected, "\(result.screen)")
    }

    @Test func zshSourcedRegistersItselfAndCompletesTheNamespacesOfTheCacheFolderGiven() throws {
        // As `source <(imgcache completions zsh)` in a .zshrc does.
        let sourced = try zsh("fetch --thum", sourced: true)
        #expect(sourced.offered == ["--thumbnail"], "\(sourced.screen)")
        let root = try TemporaryDirectory("imgcache-zsh-root")
        try markedNamespaces(["crew", "gallery"], in: root.path)
        try FileManager.default.createDirectory(atPath: root.appending("notours"), withIntermediateDirectories: true)
        let offered = try zsh("--cache-dir \(root.path) -n ")
        #expect(offered.offered == ["crew", "gallery"], "\(offered.screen)")
    }

    /// Namespace folders as imgcache makes them (with a CACHEDIR.TAG, or an earlier version's lock).
    func markedNamespaces(_ names: [String], in root: String) throws {
        for (index, name) in names.enumerated() {
            try FileManager.default.createDirectory(atPath: root + "/" + name, withIntermediateDirectories: true)
            let marker = index % 2 == 0 ? "/CACHEDIR.TAG" : "/lock"
            FileManager.default.createFile(atPath: root + "/" + name + marker, contents: Data())
        }
    }
}
