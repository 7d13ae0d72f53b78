#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCore

/// What a command line asks for: the parser's result.
public enum Invocation: Equatable, Sendable {
    /// Show help: the overview, or one command's.
    case help(command: String?)
    /// Show the version and the C libraries found; `verbose`: where each came from.
    case version(verbose: Bool)
    /// Print the manual page source.
    case manual
    /// Print the completion script for a shell.
    case completions(shell: String)
    case run(GlobalOptions, Command)
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
    /// A list of URLs to read instead ("-" is standard input).
    public var input: String?
    /// Where to write a copy of the image ("-" is standard output).
    public var output: String?
    /// Print `URL<TAB>PATH` lines rather than paths.
    public var withURL = false
    /// Copy each image into this folder under its URL's file name.
    public var outputDirectory: String?
    public var manager = ManagerArguments()

    public init(urls: [String], output: String? = nil) {
        self.urls = urls
        self.output = output
    }
}

/// `imgcache prefetch` arguments.
public struct PrefetchArguments: Equatable, Sendable {
    /// The list's path; nil or "-" is standard input.
    public var input: String?
    public var showProgress = true
    public var manager = ManagerArguments()

    public init(input: String? = nil) {
        self.input = input
    }
}

/// What fetch and prefetch share: how each URL is answered and how downloads run.
public struct ManagerArguments: Equatable, Sendable {
    /// How each image is asked for, with the option bits.
    public var settings = FetchSettings()
    /// How the downloads run.
    public var downloads = DownloadConfiguration()
    /// Folders consulted after the namespace, never written.
    public var readOnlyPaths: [String] = []
    /// `--remote`: the remote stores given (empty for `--remote none`); nil: none given.
    public var remotes: [RemoteSpec]?
    /// `--remember`: save the remotes given as the namespace's.
    public var remember = false
    /// `-u USER` without a password: ask it on the terminal.
    public var asksPassword = false

    public init() {}
}

/// `imgcache cache-info` arguments.
public struct CacheInfoArguments: Equatable, Sendable {
    public var allNamespaces = false
    /// Zero the statistics before showing them.
    public var zero = false
    public init() {}
}

/// `imgcache clean` arguments.
public struct CleanArguments: Equatable, Sendable {
    /// Limits given on the command line (nil: remembered or default).
    public var maxSize: SizeLimit?
    public var maxAge: AgeLimit?
    public var failedTTL: AgeLimit?
    public var remember = false
    public var dryRun = false
    public var allNamespaces = false
    public init() {}
}

/// `imgcache list` arguments.
public struct ListArguments: Equatable, Sendable {
    /// How `list` orders its lines.
    public enum Order: String, Equatable, Sendable { case recent, size, url }
    public var pattern: String?
    public var order: Order?
    public var failed = false
    public init() {}
}

/// `imgcache remove` arguments.
public struct RemoveArguments: Equatable, Sendable {
    public var urls: [String] = []
    public var globs: [String] = []
    public var dryRun = false
    /// `--key-filter`: the filter the entries were fetched with, so their key is found.
    public var keyFilter: CacheKeyFilter = .none
    public init() {}
}

/// `imgcache config` arguments.
public struct ConfigArguments: Equatable, Sendable {
    public var maxSize: SizeLimit?
    public var maxAge: AgeLimit?
    public var failedTTL: AgeLimit?
    /// `--umask MASK`: `.some(nil)` for 'none' (forget it).
    public var umask: mode_t??
    /// `--unset KEY`: settings to forget.
    public var unset: [String] = []
    public var reset = false
    public init() {}
}

/// `imgcache remote check` arguments.
public struct RemoteArguments: Equatable, Sendable {
    /// `--remote`: the stores to check; nil: the ones fetch would use.
    public var remotes: [RemoteSpec]?
    public var allowInvalidCertificates = false
    public init() {}
}

/// `imgcache clear` arguments.
public struct ClearArguments: Equatable, Sendable {
    /// Forget the failed URLs instead of removing entries.
    public var failedOnly = false
    /// With `failedOnly`: forget only these URLs' failures.
    public var failedURLs: [String] = []
    public var allNamespaces = false
    public init() {}
}
