import ImgCacheCore

/// What a command line asks for: the parser's result.
public enum Invocation: Equatable, Sendable {
    /// Show help: the overview, or one command's.
    case help(command: String?)
    case version
    /// Print the manual page source.
    case manual
    /// Print the completion script for a shell.
    case completions(shell: String)
    case run(GlobalOptions, Command)
}

/// A command with its typed arguments.
public enum Command: Equatable, Sendable {
    case fetch(FetchArguments)
    case cacheInfo(CacheInfoArguments)
    case clean(CleanArguments)
    case clear(ClearArguments)
    /// A command this version lists but does not have.
    case unavailable(String)
}

/// Options that apply to every command.
public struct GlobalOptions: Equatable, Sendable {
    public var cacheDirectory: String?
    public var namespace: String?
    public var json = false
    public var quiet = false
    /// How many times -v was given.
    public var verbosity = 0
    public var color: ColorChoice = .auto

    public init() {}
}

/// `imgcache fetch` arguments.
public struct FetchArguments: Equatable, Sendable {
    public var urls: [String]
    /// Where to write a copy of the image ("-" is standard output).
    public var output: String?
    /// How each image is asked for.
    public var settings = FetchSettings()
    /// How the downloads run.
    public var downloads = DownloadConfiguration()

    /// Folders consulted after the namespace, never written.
    public var readOnlyPaths: [String] = []

    public init(urls: [String], output: String? = nil) {
        self.urls = urls
        self.output = output
    }
}

/// `imgcache cache-info` arguments.
public struct CacheInfoArguments: Equatable, Sendable {
    public var allNamespaces = false
    public init() {}
}

/// `imgcache clean` arguments.
public struct CleanArguments: Equatable, Sendable {
    /// Limits given on the command line (nil: remembered or default).
    public var maxSize: SizeLimit?
    public var maxAge: AgeLimit?
    public var remember = false
    public var dryRun = false
    public var allNamespaces = false
    public init() {}
}

/// `imgcache clear` arguments.
public struct ClearArguments: Equatable, Sendable {
    /// Forget the failed URLs instead of removing entries.
    public var failedOnly = false
    public var allNamespaces = false
    public init() {}
}
