#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCore

/// What fetch and prefetch share: building the fetcher from the arguments,
/// reading a list, signals, JSON error lines and exit statuses.
enum ManagerSetup {
    /// The list at `path` ("-": standard input), or nil after saying why it
    /// cannot be read. Its descriptor stays open until the process ends: the
    /// reader thread may still be in read() when a run is interrupted.
    static func openList(_ path: String, format choice: ListFormat.Choice, console: Console, quiet: Bool) -> URLList? {
        let format = choice.format(of: path)
        guard path != "-" else {
            if console.standardError.isTerminal, isatty(0) == 1, !quiet {
                console.note(format.isTable ? "reading a \(format.kind.rawValue) table from standard input; end with Ctrl-D"
                             : "reading URLs from standard input, one per line; end with Ctrl-D")
            }
            return URLList(descriptor: 0, name: "standard input", format: format)
        }
        do {
            return try URLList.open(path: path, format: format)
        } catch {
            console.error("cannot read the list of URLs: \(error.errno == .isDirectory ? path + " is a directory" : error.description)")
            return nil
        }
    }

    /// The lists at `paths`, read one after the other as one (each its own table, with its own
    /// header); nil after saying why one cannot be read. Standard input ("-") may be one of them, once.
    static func openLists(_ paths: [String], format choice: ListFormat.Choice, console: Console, quiet: Bool) -> URLList? {
        guard paths.count > 1 else { return openList(paths.first ?? "-", format: choice, console: console, quiet: quiet) }
        var lists: [URLList] = []
        for path in paths {
            // A later table without the URL column stops the run before any request, as the first one does.
            if let problem = URLList.headerProblem(ofTableAt: path, format: choice.format(of: path)) {
                console.error("cannot read the list of URLs: cannot read \(path): \(problem)")
                return nil
            }
            guard let list = openList(path, format: choice, console: console, quiet: quiet) else { return nil }
            lists.append(list)
        }
        return URLList.chained(lists)
    }

    /// Whether `column`, named by `option`, is a column of the table at `path`: a misspelt one is
    /// said (usage, 64) before anything is fetched, when the table's header can be read first.
    static func checkColumn(_ column: String?, option: String, path: String, format: ListFormat.Choice, console: Console) -> Bool {
        guard let column, let columns = URLList.columns(ofTableAt: path, format: format.format(of: path)), !columns.contains(column) else {
            return true
        }
        let near = columns.min { Suggestion.distance($0, column) < Suggestion.distance($1, column) }
        let named = columns.prefix(8).map { "'\(ControlCharacters.escaped($0))'" }.joined(separator: ", ") + (columns.count > 8 ? ", …" : "")
        console.error("the table \(ControlCharacters.escaped(path)) has no column '\(ControlCharacters.escaped(column))' (\(option)); its header names \(named)"
                      + (near.map { Suggestion.distance($0, column) <= 2 ? "; did you mean '\(ControlCharacters.escaped($0))'?" : "" } ?? ""))
        return false
    }

    /// Says why the list stopped being read, and the status that leaves: a limit of the process
    /// (no thread to read it with, no descriptor) is the system's refusal (71), not the list's (66).
    static func reportInputFailure(_ error: SystemError, console: Console) -> ExitStatus {
        if error.exhaustsResources {
            console.error("\(error); the list of URLs was not read to its end")
            return .systemError
        }
        console.error("cannot read the list of URLs: \(error)")
        return .noInput
    }

    /// The manager for a run, or the status to exit with after saying why
    /// there is none (a bad IMGCACHE_REMOTE, remotes that cannot be remembered).
    static func fetcher(_ arguments: ManagerArguments, cache: DiskCache, console: Console,
                        environment: Environment) -> Result<ImageFetcher, ExitStatus> {
        let cwd = arguments.readOnlyPaths.contains { !$0.hasPrefix("/") } ? FileSystem.currentDirectory() : ""
        let readOnly = arguments.readOnlyPaths.map { ReadOnlyCache(directory: $0.hasPrefix("/") ? $0 : cwd + "/" + $0) }
        // A path that holds no namespace finds nothing: said, with the namespace folder when a cache root was given.
        for (given, folder) in zip(arguments.readOnlyPaths, readOnly.map(\.directory)) {
            let status = (try? FileSystem.status(folder)) ?? nil
            if status?.isDirectory != true {
                console.warning("--read-only-path \(ControlCharacters.escaped(given)) is no folder: nothing is read from it")
            } else if (try? FileSystem.status(folder + "/" + cache.location.namespace.name))??.isDirectory == true {
                console.warning("--read-only-path \(ControlCharacters.escaped(given)) is a cache's root, not a namespace's folder: "
                                + "give \(ControlCharacters.escaped(given))/\(cache.location.namespace.name)")
            }
        }
        var settings = arguments.settings
        let remembered = DecodeLimits.trusted(cache.settings, writableByUserAlone: NamespaceSettings.writableByUserAlone(in: cache.directory))
        // Only the limits this run takes from the file are worth a word.
        if arguments.decodeSeconds == nil || arguments.decodeMemory == nil {
            for line in remembered.ignored where line.contains("max-decode-time") ? arguments.decodeSeconds == nil : arguments.decodeMemory == nil {
                console.warning("namespace '\(cache.location.namespace)': " + line)
            }
        }
        settings.decodeLimits = DecodeLimits.resolve(seconds: arguments.decodeSeconds, memory: arguments.decodeMemory,
                                                     remembered: remembered.settings)
        if arguments.asksPassword, let user = settings.credentials?.user {
            guard let password = PasswordPrompt.ask(user: user) else {
                // The value is not repeated: it may be a password typed without its user.
                console.error("-u was given a user without a password, and there is no terminal to ask it on")
                console.plain("give -u USER:PASSWORD, or --netrc-file FILE")
                return .failure(.usage)
            }
            settings.credentials = Credentials(user: user, password: password)
        }
        if arguments.usesRemotes {
            switch remotes(arguments, cache: cache, console: console, environment: environment) {
            case .success(let remotes): settings.remotes = remotes
            case .failure(let status): return .failure(status)
            }
        }
        var downloads = RequestFiles.resolved(arguments.downloads, environment: environment)
        // Transfers the descriptor limit has room for: more would fail at a socket, a body's file or a
        // decoder's library, each URL for want of a descriptor another transfer holds.
        let fitting = DownloadConfiguration.transfersFitting(downloads.maximumConcurrentDownloads)
        if fitting < downloads.maximumConcurrentDownloads {
            if console.verbosity > 0 {
                console.detail("\(downloads.maximumConcurrentDownloads) transfers at once lowered to \(fitting): the limit of open files "
                               + "(ulimit -n \(DownloadConfiguration.openFileLimit ?? 0)) has room for no more")
            }
            downloads.maximumConcurrentDownloads = fitting
        }
        let fetcher = ImageFetcher(cache: cache, readOnlyCaches: readOnly, settings: settings,
                                   downloaderConfiguration: downloads, environment: environment)
        // Checked on the first download: a hit reads none of these files.
        fetcher.checkRequestFiles = { [downloads = arguments.downloads] in RequestFiles.problem(downloads, environment: environment) }
        if console.verbosity > 0 { fetcher.log = { [console] line in console.detail(line) } }
        fetcher.warn = { [console] line, cause in console.warning(line + (cause?.commandLineHint ?? "")) }
        if console.verbosity > 0, !settings.remotes.isEmpty {
            console.detail("remote stores: " + settings.remotes.map(\.description).joined(separator: ", "))
        }
        if arguments.downloads.allowInvalidCertificates {
            console.warning("--insecure: TLS certificates and host names are not verified")
        }
        let ignored = arguments.settings.options.intersection(ImageOptions.withoutMeaning)
        if !ignored.isEmpty {
            console.detail("options without effect in a command-line tool: " + ignored.names.joined(separator: ", "))
        }
        watchSignals(fetcher, console: console)
        return .success(fetcher)
    }

    /// The remote stores for a run: `--remote` (saved with `--remember`), else
    /// `IMGCACHE_REMOTE` (space-separated), else the namespace's remembered ones.
    static func remotes(_ arguments: ManagerArguments, cache: DiskCache, console: Console,
                        environment: Environment) -> Result<[RemoteSpec], ExitStatus> {
        if let given = arguments.remotes {
            guard arguments.remember else { return .success(given) }
            do {
                try cache.updateSettings { $0.remotes = given.map(\.text) }
            } catch {
                console.error("cannot remember the remote stores: \(error)")
                return .failure(.cacheUnwritable)
            }
            console.note(given.isEmpty ? "remembered: no remote store for namespace '\(cache.location.namespace)'"
                         : "remembered for namespace '\(cache.location.namespace)': " + given.map(\.description).joined(separator: " "))
            if given.contains(where: \.sendsCredentials), !NamespaceSettings.writableByUserAlone(in: cache.directory) {
                console.warning("the settings file can be written by others than you, so later runs will not use a remembered store "
                                + "that sends credentials; give it in IMGCACHE_REMOTE instead")
            }
            return .success(given)
        }
        do {
            let selection = try RemoteSelection.resolve(given: nil, environment: environment, remembered: cache.settings,
                                                        // Only remembered stores need the file's owner checked.
                                                        trustsCredentials: cache.settings.remotes?.isEmpty ?? true
                                                            || NamespaceSettings.writableByUserAlone(in: cache.directory))
            for (text, reason) in selection.unreadable { console.warning("ignoring the remembered remote '\(text)': \(reason)") }
            return .success(selection.remotes)
        } catch {
            console.error("invalid IMGCACHE_REMOTE: \(error)")
            console.plain("each remote is a URL with optional |attributes, separated by spaces; see 'imgcache help fetch'")
            return .failure(.usage)
        }
    }

    /// Once the run starts threads (a run of hits never does), SIGINT and
    /// SIGTERM stop it instead of killing the process.
    private static func watchSignals(_ fetcher: ImageFetcher, console: Console) {
        let interruption = fetcher.interruption
        fetcher.beforeFirstThread = {
            do {
                try SignalWatcher.start { signal, _ in interruption.interrupt(signal: signal) }
            } catch {
                console.warning("cannot watch for SIGINT: \(error); an interruption may leave temporary files for clean")
            }
        }
    }

    /// The status for a run stopped by a signal, after saying so.
    static func interruptedStatus(_ fetcher: ImageFetcher, console: Console) -> ExitStatus {
        let signal = fetcher.interruption.signal ?? SIGINT
        console.error("interrupted by \(signal == SIGTERM ? "SIGTERM" : "SIGINT"); transfers aborted")
        return signal == SIGTERM ? .terminated : .interrupted
    }

    static func errorJSON(url: String, error: FetchError) -> JSONObject {
        // (A table's row is added by the caller, last.)
        var object = JSONObject()
        if case .badRow(let line, _) = error {
            // A row without a URL that can be taken: which line of the list it is.
            object.add("url", JSONValue.null)
            object.add("line", line)
        } else {
            object.add("url", RemoteURL.redacted(url))
        }
        object.add("error", error.commandLineMessage)
        if case .blacklisted = error { object.add("blacklisted", true) } else { object.add("blacklisted", false) }
        return object
    }
}
