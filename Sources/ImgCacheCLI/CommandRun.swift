import ImgCacheCore

/// One run of a subcommand: its parsed arguments and what every command is
/// given. Each command is an extension of it named by a type alias
/// (`FetchCommand` is `CommandRun<FetchArguments>`), so a command's file holds
/// only what it does.
struct CommandRun<Arguments> {
    let arguments: Arguments
    let globals: GlobalOptions
    let console: Console
    let environment: Environment
    /// The namespace named, or with `--all-namespaces` every one under the root.
    let caches: [DiskCache]

    /// The namespace named (for commands without `--all-namespaces`).
    var cache: DiskCache { caches[0] }
}
