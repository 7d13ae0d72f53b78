/// What kind of value an option or operand takes; completions and the man page
/// use it to say what may go there.
public enum ValueKind: Equatable, Sendable {
    case text
    case path
    case directory
    case url
    case namespace
    /// The name of one of imgcache's commands.
    case command
    /// One of a fixed set of words: the parser refuses any other.
    case choice(Words)
    /// Words completions offer, where others are valid too (masks, `keep-query=NAME`).
    case suggestions(Words)

    /// A list of words made only when read: several come from tables (every option bit, every
    /// format written, every colour name) that a run which does not give the option never needs
    /// (made at start-up, they cost every run some 90,000 instructions).
    public struct Words: Equatable, Sendable, ExpressibleByArrayLiteral {
        private let make: @Sendable () -> [String]
        public var list: [String] { make() }

        public init(_ make: @autoclosure @escaping @Sendable () -> [String]) { self.make = make }
        public init(arrayLiteral words: String...) { self.make = { words } }

        public static func == (lhs: Words, rhs: Words) -> Bool { lhs.list == rhs.list }
    }
}

/// One option as the user types it, declared once in `CommandTable`. Its help text
/// is made only when asked for (help, the man page, completions): many name every
/// format the codecs take, and a run that parses the option needs none of it.
public struct OptionSpec: Equatable, Sendable {
    public let name: OptionName
    /// The long spelling without dashes ("cache-dir").
    public var long: String { name.rawValue }
    /// The one-letter spelling, if any.
    public let short: Character?
    /// The placeholder shown in help ("DIR"); nil for a flag.
    public let metavar: String?
    public let kind: ValueKind?
    private let makeHelp: @Sendable () -> String
    public var help: String { makeHelp() }
    /// Whether giving it more than once means something (counted or collected).
    public let repeatable: Bool
    /// For a flag that may carry a value after `=` (`--scale-down=20M`): its placeholder.
    public let optionalValue: String?

    /// A switch that takes no value, or with `optionalValue` one only after `=`.
    public static func flag(_ name: OptionName, _ short: Character? = nil, repeatable: Bool = false, optionalValue: String? = nil,
                            help: @autoclosure @escaping @Sendable () -> String) -> OptionSpec {
        OptionSpec(name: name, short: short, metavar: nil, kind: nil, makeHelp: help, repeatable: repeatable, optionalValue: optionalValue)
    }

    /// An option that takes a value.
    public static func value(_ name: OptionName, _ short: Character? = nil, metavar: String, kind: ValueKind,
                             repeatable: Bool = false, help: @autoclosure @escaping @Sendable () -> String) -> OptionSpec {
        OptionSpec(name: name, short: short, metavar: metavar, kind: kind, makeHelp: help, repeatable: repeatable, optionalValue: nil)
    }

    public static func == (lhs: OptionSpec, rhs: OptionSpec) -> Bool {
        lhs.name == rhs.name && lhs.short == rhs.short && lhs.metavar == rhs.metavar && lhs.kind == rhs.kind
            && lhs.repeatable == rhs.repeatable && lhs.optionalValue == rhs.optionalValue && lhs.help == rhs.help
    }

    public var takesValue: Bool { metavar != nil }

    /// "--cache-dir" or "-n/--namespace" style spellings for messages.
    public var longSpelling: String { "--" + long }

    /// How help lists it: "-n, --namespace NAME".
    public var synopsis: String {
        var text = short.map { "-\($0), " } ?? "    "
        text += longSpelling
        if let metavar { text += " " + metavar }
        if let optionalValue { text += "[=" + optionalValue + "]" }
        return text
    }
}

/// A positional argument of a command.
public struct OperandSpec: Equatable, Sendable {
    public let name: String
    public let kind: ValueKind
    public let help: String
    /// Fewest and most occurrences (nil: no upper bound).
    public let minimum: Int
    public let maximum: Int?

    /// How usage lines show it: "URL...", "[COMMAND]".
    public var synopsis: String {
        let repeated = (maximum ?? Int.max) > 1 ? name + "..." : name
        return minimum == 0 ? "[" + repeated + "]" : repeated
    }
}
