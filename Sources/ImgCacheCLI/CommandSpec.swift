/// One command as declared in `CommandTable`: its name, what it does, its
/// options and operands, and an example. Help, the man page and completions
/// are all read from these values.
public struct CommandSpec: Equatable, Sendable {
    public let name: String
    /// One line for the command list.
    public let summary: String
    /// A paragraph for the command's own help, made only when asked for.
    private let makeDescription: @Sendable () -> String
    public var description: String { makeDescription() }
    public let options: [OptionSpec]
    /// Options the command reads only to refuse them with a reason (export's --refresh): shown
    /// nowhere (help, man page, completions), since the command takes none of them.
    public let refusedOptions: [OptionSpec]
    public let operands: [OperandSpec]
    /// Example invocations, each a (command line, what it does) pair.
    public let examples: [(String, String)]

    public init(name: String, summary: String, description: @autoclosure @escaping @Sendable () -> String, options: [OptionSpec] = [],
                refusedOptions: [OptionSpec] = [], operands: [OperandSpec] = [], examples: [(String, String)] = []) {
        self.name = name
        self.summary = summary
        self.makeDescription = description
        self.options = options
        self.refusedOptions = refusedOptions
        self.operands = operands
        self.examples = examples
    }

    public static func == (lhs: CommandSpec, rhs: CommandSpec) -> Bool {
        lhs.name == rhs.name && lhs.summary == rhs.summary && lhs.description == rhs.description
            && lhs.options == rhs.options && lhs.operands == rhs.operands
            && lhs.examples.elementsEqual(rhs.examples) { $0.0 == $1.0 && $0.1 == $1.1 }
    }

    /// "imgcache fetch [options] URL...".
    public var usage: String {
        var parts = ["imgcache", name]
        if !options.isEmpty { parts.append("[options]") }
        parts += operands.map(\.synopsis)
        return parts.joined(separator: " ")
    }
}
