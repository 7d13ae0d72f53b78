#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCore

/// The CLI's entry point: parse, resolve the cache, run the command, print.
public enum CommandRunner {
    /// Runs imgcache with `arguments` (without the program name) and returns the exit status.
    public static func run(_ arguments: [String], environment: [String: String]) -> Int32 {
        // Broken pipes surface as EPIPE from write(), handled where output is written.
        signal(SIGPIPE, SIG_IGN)
        let invocation: Invocation
        do {
            invocation = try CommandLineParser.parse(arguments)
        } catch {
            var globals = GlobalOptions()
            globals.color = CommandLineParser.requestedColor(in: arguments)
            return usageFailure(error, console: Console(globals: globals, environment: environment))
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
        switch command {
        case .unavailable(let name):
            console.error("'\(name)' is not available in imgcache \(ImgCache.version)")
            return ExitStatus.unavailable.rawValue
        case .fetch(let fetchArguments):
            let location: CacheLocation
            do {
                location = try CacheLocation.resolve(
                    cacheDirectory: globals.cacheDirectory, namespace: globals.namespace,
                    environment: environment, currentDirectory: FileSystem.currentDirectory())
            } catch {
                return usageFailure(.invalidEnvironment(error.description), console: console)
            }
            var status = ExitStatus.success
            let outcome = finish(console) { () throws(SystemError) in
                status = try FetchCommand(arguments: fetchArguments, globals: globals, location: location, console: console).run()
            }
            return outcome == ExitStatus.success.rawValue ? status.rawValue : outcome
        }
    }

    /// The whole output of an invocation that only prints: help, manual, completions, version.
    private static func printedText(for invocation: Invocation) -> String {
        switch invocation {
        case .help(let name):
            return name.flatMap(CommandTable.command(named:)).map(HelpFormatter.command) ?? HelpFormatter.overview()
        case .manual: return ManPage.render()
        case .completions(let shell): return CompletionScript.script(for: shell) ?? ""
        case .version: return "imgcache \(ImgCache.version)\n"
        case .run: return ""
        }
    }
    private static func usageFailure(_ error: UsageError, console: Console) -> Int32 {
        console.error(error.message)
        console.plain(error.hint)
        return ExitStatus.usage.rawValue
    }

    /// Runs `body` and flushes stdout; a reader that went away ends the run quietly.
    private static func finish(_ console: Console, _ body: () throws(SystemError) -> Void) -> Int32 {
        do {
            try body()
            try console.standardOutput.flush()
            return ExitStatus.success.rawValue
        } catch where error.code == EPIPE_CODE {
            return ExitStatus.brokenPipe.rawValue
        } catch {
            console.error(error.description)
            return ExitStatus.outputFailed.rawValue
        }
    }
}

/// EPIPE as a constant pattern for `catch where`.
let EPIPE_CODE = EPIPE
