import ImgCacheCore

/// `imgcache help [COMMAND]` and `imgcache help --man`: answered by the
/// invocation itself (the text is printed without a cache), so its run is never reached.
struct HelpRequest: Subcommand {
    /// The command's name and one-line summary, apart from its table: a run finds its command, and
    /// `help` lists them all, without building every command's table.
    static let name = "help"
    static let summary = "Show help for imgcache or one of its commands"
    static let spec = CommandSpec(
        name: name, summary: summary,
        description: "Shows the overview, or with a command name that command's help.",
        options: [.flag(.man, help: "Print the manual page instead (man(7) source; read it with man -l -)")],
        operands: [OperandSpec(name: "COMMAND", kind: .command, help: "the command to explain", minimum: 0, maximum: 1)],
        examples: [("imgcache help fetch", "the fetch command's options"),
                   ("imgcache help --man | man -l -", "the manual page")]
    )

    static func invocation(_ options: ParsedOptions, globals: GlobalOptions) throws(UsageError) -> Invocation {
        if options.has(.man) {
            if let extra = options.operands.first { throw .unexpectedOperand(command: spec.name, operand: extra) }
            return .manual
        }
        guard let topic = options.operands.first else { return .help(command: nil) }
        guard CommandTable.command(named: topic) != nil else {
            throw .unknownCommand(topic, suggestion: Suggestion.command(for: topic))
        }
        return .help(command: topic)
    }

    static func run(_ command: CommandRun<HelpRequest>) throws(SystemError) -> ExitStatus { .success }
}

/// `imgcache completions SHELL`: answered by the invocation (the script is printed), never run.
struct CompletionsRequest: Subcommand {
    /// The command's name and one-line summary, apart from its table: a run finds its command, and
    /// `help` lists them all, without building every command's table.
    static let name = "completions"
    static let summary = "Print a shell completion script"
    static let spec = CommandSpec(
        name: name, summary: summary,
        description: "Prints the completion script for bash, zsh or fish. `make install` installs all three.",
        operands: [OperandSpec(name: "SHELL", kind: .choice(ValueKind.Words(CompletionScript.shells)), help: "bash, zsh or fish",
                               minimum: 1, maximum: 1)],
        examples: [("source <(imgcache completions bash)", "completion in the current bash session")]
    )

    static func invocation(_ options: ParsedOptions, globals: GlobalOptions) throws(UsageError) -> Invocation {
        // The shell was checked against the operand's choices.
        .completions(shell: options.operands[0])
    }

    static func run(_ command: CommandRun<CompletionsRequest>) throws(SystemError) -> ExitStatus { .success }
}
