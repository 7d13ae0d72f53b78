import ImgCacheCore

/// Renders `--help` text from the command table.
public enum HelpFormatter {
    /// The overview: usage, commands, global options, exit status.
    public static func overview() -> String {
        var lines = [
            "imgcache \(ImgCache.version): fetch images once, keep them in a local cache",
            "",
            "Usage: imgcache [global options] COMMAND [options] [arguments]",
            "",
            "Commands:",
        ]
        // Names and summaries only: no command's table is built for the overview.
        let width = CommandTable.subcommands.map { $0.name.count }.max() ?? 0
        for command in CommandTable.subcommands {
            lines.append("  " + pad(command.name, width) + "  " + command.summary)
        }
        lines += ["", "Global options:"]
        lines += optionLines(CommandTable.globalOptions)
        lines += ["", "Exit status:"]
        lines += ExitStatus.documented.map { "  " + pad(String($0.rawValue), 3) + "  " + $0.meaning }
        lines += ["", "Run 'imgcache COMMAND --help' for a command's options; 'man imgcache' for everything."]
        return lines.joined(separator: "\n") + "\n"
    }

    /// One command's help: usage, description, options, examples.
    public static func command(_ spec: CommandSpec) -> String {
        var lines = ["Usage: \(spec.usage)", "", spec.summary + ".", ""]
        lines += wrap(spec.description, width: 78, indent: "")
        if !spec.operands.isEmpty {
            lines += ["", "Arguments:"]
            let width = spec.operands.map(\.name.count).max() ?? 0
            lines += spec.operands.map { "  " + pad($0.name, width) + "  " + $0.help }
        }
        if !spec.options.isEmpty {
            lines += ["", "Options:"]
            lines += optionLines(spec.options)
        }
        lines += ["", "Global options (before or after the command):"]
        lines += optionLines(CommandTable.globalOptions)
        if !spec.examples.isEmpty {
            lines += ["", "Examples:"]
            for (example, meaning) in spec.examples {
                lines.append("  \(example)")
                lines.append("      \(meaning)")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func optionLines(_ options: [OptionSpec]) -> [String] {
        let width = options.map(\.synopsis.count).max() ?? 0
        return options.map { "  " + pad($0.synopsis, width) + "  " + $0.help }
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - text.count))
    }

    /// Breaks `text` into lines of at most `width` characters at spaces.
    static func wrap(_ text: String, width: Int, indent: String) -> [String] {
        var lines: [String] = []
        for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var line = indent
            for word in paragraph.split(separator: " ") {
                if line.count > indent.count && line.count + 1 + word.count > width {
                    lines.append(line)
                    line = indent
                }
                line += (line.count > indent.count ? " " : "") + word
            }
            lines.append(line)
        }
        return lines
    }
}
