import ImgCacheCore

/// A command line imgcache cannot run. Always exit status 64.
public enum UsageError: Error, Equatable, Sendable {
    case missingCommand
    case unknownCommand(String, suggestion: String?)
    case unknownOption(String, command: String?, suggestion: String?)
    /// An option of curl's or wget's that imgcache has no need of, or spells otherwise: what to do instead.
    case habitOption(String, command: String?, advice: String)
    /// A command's option given before the command: the commands that take it.
    case optionBeforeCommand(String, commands: [String])
    case missingValue(option: String, metavar: String)
    case unexpectedValue(option: String)
    case invalidValue(option: String, value: String, reason: String)
    case missingOperand(command: String, operand: String)
    case unexpectedOperand(command: String, operand: String)
    case conflictingOptions(String, String, reason: String)
    /// An option that is pointless without another one.
    case requires(String, String)
    /// A setting from the environment that cannot be used.
    case invalidEnvironment(String)

    /// The command whose help the hint should point to, if any.
    public var command: String? {
        switch self {
        case .unknownOption(_, let command, _), .habitOption(_, let command, _): return command
        case .optionBeforeCommand(_, let commands): return commands.first
        case .missingOperand(let command, _), .unexpectedOperand(let command, _): return command
        default: return nil
        }
    }

    /// One line that says what is wrong.
    public var message: String {
        switch self {
        case .missingCommand:
            return "no command given"
        case .unknownCommand(let name, let suggestion):
            return "unknown command '\(name)'" + UsageError.didYouMean(suggestion)
        case .unknownOption(let option, let command, let suggestion):
            let scope = command.map { " for '\($0)'" } ?? ""
            return "unknown option '\(option)'\(scope)" + UsageError.didYouMean(suggestion)
        case .habitOption(let option, let command, let advice):
            let scope = command.map { " for '\($0)'" } ?? ""
            return "unknown option '\(option)'\(scope): \(advice)"
        case .optionBeforeCommand(let option, let commands):
            return "'\(option)' is an option of \(UsageError.either(commands)), not of imgcache itself: "
                + "give it after the command (imgcache \(commands[0]) \(option) ...)"
        case .missingValue(let option, let metavar):
            return "option '\(option)' needs a value (\(option) \(metavar))"
        case .unexpectedValue(let option):
            return "option '\(option)' takes no value"
        case .invalidValue(let option, let value, let reason):
            return "invalid value '\(UsageError.visible(value))' for \(option): \(reason)"
        case .missingOperand(let command, let operand):
            return "'\(command)' needs \(operand)"
        case .unexpectedOperand(let command, let operand):
            return "unexpected argument '\(operand)' for '\(command)'"
        case .conflictingOptions(let first, let second, let reason):
            return "\(first) cannot be used with \(second): \(reason)"
        case .requires(let option, let needed):
            return "\(option) needs \(needed)"
        case .invalidEnvironment(let text):
            return text
        }
    }

    /// The line after the message: where to read more.
    public var hint: String { hint(command: nil) }

    /// The hint, pointing to `fallback`'s help when the error names no command itself.
    public func hint(command fallback: String?) -> String {
        // A command that does not exist is best answered by the list of those that do.
        if case .unknownCommand = self { return "Run 'imgcache --help' for the list of commands." }
        if let command = command ?? fallback { return "Run 'imgcache \(command) --help' for usage." }
        return "Run 'imgcache --help' for usage."
    }

    /// "a, b or c".
    static func either(_ words: [String]) -> String {
        guard words.count > 1 else { return words.first ?? "" }
        return words.dropLast().joined(separator: ", ") + " or " + words.last!
    }

    /// `text` with control characters written as escapes, so that a value
    /// holding a line break cannot forge a line of output.
    static func visible(_ text: String) -> String {
        ControlCharacters.escaped(text)
    }

    private static func didYouMean(_ suggestion: String?) -> String {
        suggestion.map { " (did you mean '\($0)'?)" } ?? ""
    }
}
