#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCore

/// The CLI's entry point: parse, resolve the cache, run the command, print.
public enum CommandRunner {
    /// Runs imgcache with `arguments` (without the program name) and returns the exit status.
    public static func run(_ arguments: [String], environment: Environment = .process) -> Int32 {
        // Broken pipes surface as EPIPE from write(), handled where output is written.
        signal(SIGPIPE, SIG_IGN)
        // A parent may leave SIGINT or SIGTERM blocked; imgcache's commands must hear them.
        SignalWatcher.restoreDefaults()
        let invocation: Invocation
        do {
            invocation = try CommandLineParser.parse(arguments)
        } catch {
            var globals = GlobalOptions()
            globals.color = CommandLineParser.requestedColor(in: arguments)
            // A bad value inside a command points to that command's help.
            let named = arguments.prefix { $0 != "--" }.first { CommandTable.command(named: $0) != nil }
            return usageFailure(error, console: Console(globals: globals, environment: environment), command: named)
        }
        let globals: GlobalOptions, command: Command
        switch invocation {
        case .run(let runGlobals, let runCommand):
            (globals, command) = (runGlobals, runCommand)
        case .help, .manual, .completions, .version:
            let console = Console(globals: GlobalOptions(), environment: environment)
            let text = printedText(for: invocation)
            return finish(console) { () throws(SystemError) in try console.standardOutput.write(text) }
        }
        let console = Console(globals: globals, environment: environment)
        var environment = environment
        // Without HOME (cron, some service managers), the home folder comes from the password database, as for a shell.
        if (environment["HOME"] ?? "").isEmpty, let home = passwordDatabaseHome() { environment = environment.setting("HOME", to: home) }
        let location: CacheLocation
        let placement: DiskCache.MetadataPlacement
        do {
            location = try CacheLocation.resolve(
                cacheDirectory: globals.cacheDirectory, namespace: globals.namespace,
                environment: environment, currentDirectory: FileSystem.currentDirectory()).followingRootLink()
        } catch {
            return usageFailure(.invalidEnvironment(error.commandLineMessage), console: console)
        }
        do { placement = try metadataPlacement(environment) } catch { return usageFailure(error, console: console) }
        let cache = DiskCache(location: location, metadataPlacement: placement, listsShards: command.value.looksUpMany)
        // The namespace's settings are read once, here: their umask applies to every file the run makes.
        let settings = cache.settingsInspection
        do {
            for warning in try CacheUmask.apply(environment: environment, remembered: settings.settings.umask) {
                console.warning("namespace '\(location.namespace)': " + warning)
            }
        } catch {
            return usageFailure(.invalidEnvironment("invalid IMGCACHE_UMASK: \(error.reason)"), console: console)
        }
        // Some commands say it themselves, and stop for it where they must.
        if !settings.problems.isEmpty, !type(of: command.value).reportsSettings {
            MaintenanceMessages.reportSettings(settings, of: cache, console: console)
        }
        // config --umask says it after the change, as the folders then are.
        if !command.value.changesUmask,
           let exposure = CacheRoot.exposure(of: [location.root, location.directory], sharedMask: CacheUmask.chosenMask) {
            console.warning(exposure)
        }
        var status = ExitStatus.success
        let outcome = finish(console) { () throws(SystemError) in
            status = try execute(command.value, globals: globals, console: console, environment: environment, cache: cache)
        }
        return outcome == ExitStatus.success.rawValue ? status.rawValue : outcome
    }

    /// Runs `arguments`' command on the namespaces its scope names (after
    /// saying why there are none, when there are none).
    private static func execute<Arguments: Subcommand>(_ arguments: Arguments, globals: GlobalOptions, console: Console,
                                                       environment: Environment, cache: DiskCache) throws(SystemError) -> ExitStatus {
        var status = ExitStatus.success
        guard let caches = namespaces(arguments.scope, cache, console: console, status: &status) else { return status }
        return ExitStatus.worse(status, try Arguments.run(CommandRun(arguments: arguments, globals: globals, console: console, environment: environment, caches: caches)))
    }

    /// The namespace the command names, or with `--all-namespaces` every one under the root.
    private static func namespaces(_ scope: CommandScope, _ cache: DiskCache, console: Console,
                                   status: inout ExitStatus) -> [DiskCache]? {
        // A root that is a file is no cache: said, not taken for an empty one. (fetch and
        // prefetch answer each URL, with an empty line, and say it once.)
        if scope != .fetching, let root = try? FileSystem.status(cache.location.root), !root.isDirectory {
            console.error("the cache folder \(cache.location.root) is not a folder (--cache-dir, IMGCACHE_DIR)")
            status = .cacheUnwritable
            return nil
        }
        guard scope == .allNamespaces else {
            // A link in the namespace's place is neither read nor written through, whatever the command.
            guard !cache.location.namespaceIsLink else {
                console.error("namespace '\(cache.location.namespace)': \(cache.directory) is a symbolic link; imgcache does not follow links inside the cache "
                    + "(a link may stand for the whole cache folder: --cache-dir or IMGCACHE_DIR)")
                status = .cacheUnwritable
                return nil
            }
            // Another program's folder under the namespace's name is neither read nor written.
            guard NamespaceMarker.mayAdopt(cache.directory) else {
                console.error("namespace '\(cache.location.namespace)': " + MaintenanceMessages.describe(NamespaceMarker.notANamespace(cache.directory)))
                status = .cacheUnwritable
                return nil
            }
            return [cache]
        }
        do {
            let listing = try CacheRoot(path: cache.location.root).list()
            if !listing.exists {
                // A mistyped IMGCACHE_DIR in a cron line should not pass unnoticed.
                console.warning("there is no cache at \(cache.location.root) (--cache-dir, IMGCACHE_DIR): no namespace to act on")
            }
            for link in listing.links {
                // As with -n: an error, so a cron line's status tells of it; the other namespaces are still done.
                console.error("namespace '\(link)' is a symbolic link in \(cache.location.root); skipped (imgcache does not follow links inside the cache)")
                status = ExitStatus.worse(status, .cacheUnwritable)
            }
            return listing.namespaces.map {
                DiskCache(location: CacheLocation(root: cache.location.root, namespace: $0), metadataPlacement: cache.metadataPlacement)
            }
        } catch {
            console.error(MaintenanceMessages.describe(error))
            status = .cacheUnwritable
            return nil
        }
    }

    /// The user's home folder from the password database, if it has one.
    private static func passwordDatabaseHome() -> String? {
        guard let entry = getpwuid(getuid()), let directory = entry.pointee.pw_dir, directory.pointee != 0 else { return nil }
        return String(cString: directory)
    }

    /// `IMGCACHE_METADATA`: `files` keeps metadata in sidecar files even where
    /// extended attributes work; `auto` (or unset) uses attributes where possible.
    private static func metadataPlacement(_ environment: Environment) throws(UsageError) -> DiskCache.MetadataPlacement {
        switch environment["IMGCACHE_METADATA"] ?? "" {
        case "", "auto": return .automatic
        case "files": return .sidecarFiles
        case let other:
            throw .invalidEnvironment("invalid IMGCACHE_METADATA '\(UsageError.visible(other))': expected auto or files")
        }
    }

    /// The whole output of an invocation that only prints: help, manual, completions, version.
    private static func printedText(for invocation: Invocation) -> String {
        switch invocation {
        case .help(let name):
            return name.flatMap(CommandTable.command(named:)).map(HelpFormatter.command) ?? HelpFormatter.overview()
        case .manual: return ManPage.render()
        case .completions(let shell): return CompletionScript.script(for: shell) ?? ""
        case .version(let verbose): return versionText(verbose: verbose)
        case .run: return ""
        }
    }
    /// `--version`: imgcache's, then each C library as loaded here (as `curl -V`
    /// lists its libraries), and the features they allow; with -v, their files.
    static func versionText(verbose: Bool) -> String {
        let reports = SystemLibraries.all()
        var lines = ["imgcache \(ImgCache.version)"]
        let width = (reports.map(\.name.count).max() ?? 0) + 2
        for report in reports {
            let name = report.name + String(repeating: " ", count: width - report.name.count)
            if let version = report.version {
                lines.append(name + version + ", for " + report.purpose)
                if verbose, let path = report.path { lines.append(String(repeating: " ", count: width) + "from " + path) }
            } else {
                lines.append(name + "not available: " + (report.problem ?? "") + "; without it, no " + report.purpose)
            }
        }
        lines.append("Features: " + SystemLibraries.features(reports).joined(separator: " "))
        return lines.joined(separator: "\n") + "\n"
    }

    private static func usageFailure(_ error: UsageError, console: Console, command: String? = nil) -> Int32 {
        console.error(error.message)
        console.plain(error.hint(command: command))
        return ExitStatus.usage.rawValue
    }

    /// Runs `body` and flushes stdout; a reader that went away ends the run quietly.
    private static func finish(_ console: Console, _ body: () throws(SystemError) -> Void) -> Int32 {
        do {
            try body()
            try console.standardOutput.flush()
            return ExitStatus.success.rawValue
        } catch where error.errno == .brokenPipe {
            return ExitStatus.brokenPipe.rawValue
        } catch {
            console.error(error.description)
            return ExitStatus.outputFailed.rawValue
        }
    }
}
