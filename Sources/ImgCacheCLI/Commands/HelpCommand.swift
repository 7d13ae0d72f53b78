import ImgCacheCore

/// `imgcache help [COMMAND]` and `imgcache help --man`: answered by the
/// invocation itself (the text is printed without a cache), so its run is never reached.
struct HelpRequest: Subcommand {
    static var spec: CommandSpec { CommandTable.help }

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
    static var spec: CommandSpec { CommandTable.completions }

    static func invocation(_ options: ParsedOptions, globals: GlobalOptions) throws(UsageError) -> Invocation {
        // The shell was checked against the operand's choices.
        .completions(shell: options.operands[0])
    }

    static func run(_ command: CommandRun<CompletionsRequest>) throws(SystemError) -> ExitStatus { .success }
}
