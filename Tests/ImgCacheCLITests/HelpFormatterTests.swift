import ImgCacheCLI
import ImgCacheCore
import Testing

@Suite struct HelpFormatterTests {
    @Test func overviewNamesEveryCommandAndGlobalOption() {
        let text = HelpFormatter.overview()
        for command in CommandTable.commands { #expect(text.contains("  " + command.name + " ")) }
        for option in CommandTable.globalOptions { #expect(text.contains("--" + option.long)) }
    }

    @Test func commandHelpNamesEveryOptionAndHasAnExample() {
        for command in CommandTable.commands {
            let text = HelpFormatter.command(command)
            for option in command.options { #expect(text.contains(option.synopsis)) }
            #expect(text.contains("Examples:"))
        }
    }
}
