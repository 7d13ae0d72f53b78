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
    /// Whether remote stores are used at all (given, IMGCACHE_REMOTE, remembered): export uses none.
    public var usesRemotes = true
    /// `-u USER` without a password: ask it on the terminal.
    public var asksPassword = false
    /// `--max-decode-time` and `--max-decode-memory` as given (nil: the namespace's, else the default).
    public var decodeSeconds: Double?
    public var decodeMemory: Int?

    public init() {}
}







