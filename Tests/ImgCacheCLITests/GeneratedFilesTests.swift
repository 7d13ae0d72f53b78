import Foundation
import ImgCacheCLI
import ImgCacheCore
import Testing

/// The committed man page and completion scripts are exactly what the command
/// table generates; after changing the table, `make generate` rewrites them.
@Suite struct GeneratedFilesTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    func committed(_ path: String) throws -> String {
        try String(contentsOf: Self.repository.appendingPathComponent(path), encoding: .utf8)
    }

    @Test func manPageMatchesTheTable() throws {
        #expect(try committed("Docs/imgcache.1") == ManPage.render(), "run make generate")
    }

    @Test(arguments: [("bash", "completions/imgcache.bash"), ("zsh", "completions/_imgcache"), ("fish", "completions/imgcache.fish")])
    func completionScriptMatchesTheTable(shell: String, path: String) throws {
        #expect(try committed(path) == CompletionScript.script(for: shell), "run make generate")
    }

    @Test func manPageNamesEveryCommandOptionAndExitStatus() {
        let page = ManPage.render()
        for command in CommandTable.commands {
            #expect(page.contains("imgcache " + command.name.replacing("-", with: "\\-")), "\(command.name)")
        }
        for option in CommandTable.globalOptions + CommandTable.commands.flatMap(\.options) {
            #expect(page.contains("\\fB" + ("--" + option.long).replacing("-", with: "\\-") + "\\fR"), "\(option.long)")
        }
        for status in ExitStatus.allCases { #expect(page.contains(".B \(status.rawValue)\n")) }
        for section in ["NAME", "SYNOPSIS", "DESCRIPTION", "ENVIRONMENT", "FILES", "EXIT STATUS", "EXAMPLES", "SEE ALSO"] {
            #expect(page.contains(".SH \(section)\n"), "\(section)")
        }
    }

    @Test func optionsDocumentHasTheTableOfEveryBit() throws {
        #expect(try committed("Docs/OPTIONS.md").contains(OptionBits.markdownTable()), "copy OptionBits.markdownTable() into Docs/OPTIONS.md")
        #expect(OptionBits.entries.count == 17 && OptionBits.entries.allSatisfy { !$0.meaning.isEmpty })
        #expect(ManPage.render().contains(".SH OPTION BITS\n"))
    }

    @Test func completionsOfferEveryCommandAndOption() throws {
        for shell in CompletionScript.shells {
            let script = try #require(CompletionScript.script(for: shell))
            for command in CommandTable.commands { #expect(script.contains(command.name), "\(shell): \(command.name)") }
            for option in CommandTable.globalOptions + CommandTable.commands.flatMap(\.options) {
                #expect(script.contains(option.long), "\(shell): \(option.long)")
            }
        }
    }
}
