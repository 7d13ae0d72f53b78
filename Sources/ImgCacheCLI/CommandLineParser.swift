import ImgCacheCore

/// Turns the words after `imgcache` into an `Invocation`. Pure: no I/O, no
/// environment, no exit. Conventions:
/// - global options go before or after the command;
/// - `--name=value` and `--name value`; `-o value` and `-ovalue`;
/// - short flags bundle (`-qv`); a short option that takes a value ends a bundle;
/// - `--` ends options; a lone `-` is an operand (standard input or output).
public enum CommandLineParser {
    /// The most downloads `-j` allows at once.
    public static let maximumConcurrency = 256

    public static func parse(_ arguments: [String]) throws(UsageError) -> Invocation {
        var state = ParsedOptions()
        try read(arguments, into: &state)
        return try state.invocation()
    }

    /// Where secret values sit among `arguments` (`-u`'s value, the password of
    /// a URL given as an operand or to `--remote` or `--proxy`): the word's
    /// index, the UTF-8 offset where the secret starts and its length (nil: to
    /// the word's end), so that the caller can blank them in the process's own
    /// argument memory, as curl does (they are otherwise readable in
    /// /proc/PID/cmdline). Found as far as the words parse.
    public static func secretLocations(in arguments: [String]) -> [(argument: Int, offset: Int, length: Int?)] {
        var state = ParsedOptions()
        try? read(arguments, into: &state)
        return state.secretLocations
    }

    /// Reads the words into `state`, option by option.
    private static func read(_ arguments: [String], into state: inout ParsedOptions) throws(UsageError) {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if state.endOfOptions || argument == "-" || !argument.hasPrefix("-") {
                if state.command == nil {
                    guard let command = CommandTable.command(named: argument) else {
                        throw .unknownCommand(argument, suggestion: Suggestion.command(for: argument))
                    }
                    state.command = command
                } else {
                    state.operands.append(argument)
                    state.recordPasswords(in: argument, argument: index - 1, offset: 0)
                }
            } else if argument == "--" {
                state.endOfOptions = true
            } else if argument.hasPrefix("--") {
                let body = argument.dropFirst(2)
                let name = body.prefix { $0 != "=" }
                let inline = name.endIndex < body.endIndex ? String(body[body.index(after: name.endIndex)...]) : nil
                // Joined as Strings: `String + Substring` is a generic append whose first use looks its witnesses up (some 90,000 instructions).
                let long = String(name)
                let spec = try state.option(long: long, spelled: "--" + long)
                if spec.takesValue {
                    if let inline {
                        state.record(spec, value: inline, at: (index - 1, name.utf8.count + 3))
                    } else {
                        guard index < arguments.count else { throw .missingValue(option: spec.longSpelling, metavar: spec.metavar!) }
                        state.record(spec, value: arguments[index], at: (index, 0))
                        index += 1
                    }
                } else {
                    if inline != nil && spec.optionalValue == nil { throw .unexpectedValue(option: spec.longSpelling) }
                    state.record(spec, value: inline, at: nil)
                }
            } else {
                // wget's -nv, -nc, -nd, -np, -nH would read as a namespace of one letter (-n v is one).
                if argument.count == 3, argument.hasPrefix("-n"), let advice = ParsedOptions.habits[argument] {
                    throw .habitOption(argument, command: state.command?.name, advice: advice)
                }
                var letters = argument.dropFirst()
                while let letter = letters.first {
                    letters = letters.dropFirst()
                    let spec = try state.option(short: letter)
                    guard spec.takesValue else {
                        state.record(spec, value: nil, at: nil)
                        continue
                    }
                    if !letters.isEmpty {
                        state.record(spec, value: String(letters), at: (index - 1, argument.utf8.count - letters.utf8.count))
                    } else {
                        guard index < arguments.count else { throw .missingValue(option: "-\(letter)", metavar: spec.metavar!) }
                        state.record(spec, value: arguments[index], at: (index, 0))
                        index += 1
                    }
                    break
                }
            }
        }
    }

    /// The `--color` choice among `arguments`, read even when the rest does not
    /// parse, so that the usage error itself honours it. The last one wins.
    public static func requestedColor(in arguments: [String]) -> ColorChoice {
        var choice = ColorChoice.auto
        for (index, argument) in arguments.enumerated() {
            if argument == "--" { break }
            let value: String?
            if argument.hasPrefix("--color=") { value = String(argument.dropFirst("--color=".count)) }
            else if argument == "--color", index + 1 < arguments.count { value = arguments[index + 1] }
            else { value = nil }
            if let parsed = value.flatMap(ColorChoice.init(rawValue:)) { choice = parsed }
        }
        return choice
    }
}

extension ParsedOptions {
    /// What the table says of every command, checked once here: how many
    /// operands it takes, and the words a `.choice` option or operand allows
    /// (of an option given more than once, the value that counts: the last).
    func checkAgainstTable(_ command: CommandSpec) throws(UsageError) {
        let maximum = command.operands.reduce(0) { $0 + ($1.maximum ?? Int.max / 2) }
        if operands.count > maximum { throw .unexpectedOperand(command: command.name, operand: operands[maximum]) }
        if let operand = command.operands.first {
            if operands.count < operand.minimum {
                // The words it may be, when there are few: "'completions' needs SHELL (bash, zsh or fish)".
                var wanted = operand.name
                if case .choice(let words) = operand.kind { wanted += " (" + UsageError.either(words.list) + ")" }
                throw .missingOperand(command: command.name, operand: wanted)
            }
            if case .choice(let choice) = operand.kind, case let words = choice.list, let wrong = operands.first(where: { !words.contains($0) }) {
                throw .invalidValue(option: operand.name, value: wrong, reason: "expected " + UsageError.either(words))
            }
        }
        for spec in command.options + CommandTable.globalOptions {
            guard case .choice(let choice)? = spec.kind, let given = values[spec.name]?.last else { continue }
            let words = choice.list
            if !words.contains(given) {
                throw .invalidValue(option: spec.longSpelling, value: given, reason: "expected " + UsageError.either(words))
            }
        }
    }

    func invocation() throws(UsageError) -> Invocation {
        if has(.help) { return .help(command: command?.name) }
        if has(.version) { return .version(verbose: has(.verbose)) }
        guard let command else { throw .missingCommand }
        try checkAgainstTable(command)
        let globals = try globalOptions()
        guard let type = CommandTable.subcommand(named: command.name) else { throw .unknownCommand(command.name, suggestion: nil) }
        return try type.invocation(self, globals: globals)
    }
}
