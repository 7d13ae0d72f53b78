import ImgCacheCore

/// One of imgcache's commands, as a type: its entry in the option table
/// (name, options, help text), how its arguments are read from the parsed
/// words, which namespaces it acts on, and its run. The arguments' type
/// conforms; its command's file holds all of it. `CommandTable.subcommands`
/// is the one list of them: the parser and the runner look a command up
/// there, by its name, and never switch over the commands.
protocol Subcommand: Equatable, Sendable {
    /// The command's name (`fetch`) and summary: the same as its table's, without building it.
    static var name: String { get }
    static var summary: String { get }
    /// The command's entry in the table: what the parser, help, man page and completions read.
    static var spec: CommandSpec { get }
    /// What the command line asks of this command, read from the words
    /// the parser checked against `spec`.
    static func invocation(_ options: ParsedOptions, globals: GlobalOptions) throws(UsageError) -> Invocation
    /// The namespaces it acts on.
    var scope: CommandScope { get }
    /// Whether it says itself what in a namespace's settings cannot be used
    /// (else the runner warns of it before the command runs).
    static var reportsSettings: Bool { get }
    /// Whether it sets the namespace's permission mask (then it, not the runner, says what is exposed).
    var changesUmask: Bool { get }
    /// Whether it looks many URLs up (a list): then a shard is listed after a
    /// miss in it, so that later misses there ask the disk nothing.
    var looksUpMany: Bool { get }
    /// Does the work of `command` and says how it went.
    static func run(_ command: CommandRun<Self>) throws(SystemError) -> ExitStatus
}

/// The namespaces a command acts on, which the runner resolves before it runs.
enum CommandScope {
    /// The namespace named (`-n`, else the default).
    case namespace
    /// With `--all-namespaces`, every imgcache namespace under the root.
    case allNamespaces
    /// The namespace named, downloading into it: a root that is no folder is
    /// said once per URL, as any cache that cannot be written is.
    case fetching
}

extension Subcommand {
    var scope: CommandScope { .namespace }
    static var reportsSettings: Bool { false }
    var changesUmask: Bool { false }
    var looksUpMany: Bool { false }

    /// The invocation running this command with these arguments.
    func running(_ globals: GlobalOptions) -> Invocation { .run(globals, Command(self)) }
}

/// A command with its typed arguments, as the parser found them.
public struct Command: Equatable, Sendable {
    /// The arguments, of the command's own type.
    let value: any Subcommand

    init(_ value: any Subcommand) {
        self.value = value
    }

    /// The command's name.
    public var name: String { type(of: value).spec.name }

    /// The arguments, when the command is the one of `type`.
    public func arguments<Arguments>(as type: Arguments.Type) -> Arguments? {
        value as? Arguments
    }

    public static func == (a: Command, b: Command) -> Bool {
        a.value.isEqual(to: b.value)
    }
}

extension Subcommand {
    /// Equal arguments of the same command.
    func isEqual(to other: any Subcommand) -> Bool {
        guard let other = other as? Self else { return false }
        return self == other
    }
}
