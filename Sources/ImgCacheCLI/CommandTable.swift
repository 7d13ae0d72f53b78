import ImgCacheCore

/// Every command and option of imgcache, declared once. The parser, `--help`,
/// the man page and the shell completions are all derived from this table.
public enum CommandTable {
    /// Options accepted before or after any command.
    public static let globalOptions: [OptionSpec] = [
        .value("cache-dir", metavar: "DIR", kind: .directory,
               help: "Cache root (default: $IMGCACHE_DIR, else $XDG_CACHE_HOME/imgcache, else ~/.cache/imgcache)"),
        .value("namespace", "n", metavar: "NAME", kind: .namespace,
               help: "Namespace inside the cache (default: $IMGCACHE_NAMESPACE, else 'default')"),
        .flag("json", help: "Write results as JSON, one object per line"),
        .flag("quiet", "q", help: "Print nothing but errors"),
        .flag("verbose", "v", repeatable: true, help: "Print details of what happens on stderr"),
        .value("color", metavar: "WHEN", kind: .choice(ColorChoice.allCases.map(\.rawValue)),
               help: "Colour in messages: auto (a terminal without NO_COLOR), always or never"),
        .flag("help", "h", help: "Show help (for a command: imgcache COMMAND --help)"),
        .flag("version", help: "Show the version"),
    ]

    public static let fetch = CommandSpec(
        name: "fetch",
        summary: "Get images: from the cache if there, else download and store them",
        description: """
            Looks each URL up in the cache; on a miss downloads it (redirects followed, \
            a 15 s idle timeout), checks that the body is a PNG, JPEG, GIF or WebP image whose \
            header decodes, and stores it atomically. Prints the path of each cached file, \
            one per line. A failed URL prints an error and the others go on.
            """,
        options: [
            .value("output", "o", metavar: "FILE", kind: .path,
                   help: "Also write the image to FILE ('-' for standard output); one URL only"),
        ],
        operands: [OperandSpec(name: "URL", kind: .url, help: "http or https URL of an image", minimum: 1, maximum: nil)],
        examples: [
            ("imgcache fetch https://example.com/logo.png", "print the cached file's path"),
            ("imgcache fetch -o logo.png https://example.com/logo.png", "save a copy as logo.png"),
            ("imgcache --json fetch URL1 URL2", "one JSON object per URL"),
        ]
    )

    public static let prefetch = CommandSpec(
        name: "prefetch", summary: "Warm the cache from a list of URLs (not in this version)",
        description: "Not available in this version of imgcache.", isAvailable: false)
    public static let cacheInfo = CommandSpec(
        name: "cache-info", summary: "Show what the cache holds (not in this version)",
        description: "Not available in this version of imgcache.", isAvailable: false)
    public static let clean = CommandSpec(
        name: "clean", summary: "Expire old entries and trim to size (not in this version)",
        description: "Not available in this version of imgcache.", isAvailable: false)
    public static let clear = CommandSpec(
        name: "clear", summary: "Empty a namespace (not in this version)",
        description: "Not available in this version of imgcache.", isAvailable: false)

    public static let completions = CommandSpec(
        name: "completions", summary: "Print a shell completion script",
        description: "Prints the completion script for bash, zsh or fish. `make install` installs all three.",
        operands: [OperandSpec(name: "SHELL", kind: .choice(CompletionScript.shells), help: "bash, zsh or fish",
                               minimum: 1, maximum: 1)],
        examples: [("source <(imgcache completions bash)", "completion in the current bash session")]
    )

    public static let help = CommandSpec(
        name: "help", summary: "Show help for imgcache or one of its commands",
        description: "Shows the overview, or with a command name that command's help.",
        options: [.flag("man", help: "Print the manual page instead (man(7) source; read it with man -l -)")],
        operands: [OperandSpec(name: "COMMAND", kind: .command, help: "the command to explain", minimum: 0, maximum: 1)],
        examples: [("imgcache help fetch", "the fetch command's options"),
                   ("imgcache help --man | man -l -", "the manual page")]
    )

    /// All commands, in the order help lists them.
    public static let commands: [CommandSpec] = [fetch, prefetch, cacheInfo, clean, clear, completions, help]

    /// The command called `name`, if there is one.
    public static func command(named name: String) -> CommandSpec? {
        commands.first { $0.name == name }
    }
}

/// When messages use colour.
public enum ColorChoice: String, CaseIterable, Equatable, Sendable {
    case auto, always, never
}
