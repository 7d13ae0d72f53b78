#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCore

/// `imgcache config`: a namespace's remembered limits, shown or set without cleaning.
typealias ConfigCommand = CommandRun<ConfigArguments>

extension ConfigCommand {
    func run() throws(SystemError) -> ExitStatus {
        let inspection = cache.settingsInspection
        var settings = inspection.settings
        let changing = arguments.reset || arguments.maxSize != nil || arguments.maxAge != nil || arguments.failedTTL != nil
            || arguments.umask != nil || !arguments.unset.isEmpty
        if !inspection.problems.isEmpty {
            // Shown as it is, never as defaults; a change rewrites the file with what could be used.
            MaintenanceMessages.reportSettings(inspection, of: cache, console: console,
                                               refusing: changing ? "rewritten with what could be used" : "the settings in force are unknown",
                                               advise: !changing)
            if !changing { return .configurationError }
        }
        // A new mask applies at once: the folder, lock and settings made now are shared
        // already (unless IMGCACHE_UMASK decides for this run).
        let environmentMask = environment["IMGCACHE_UMASK"].flatMap { try? CacheUmask.parse($0) }
        if case .some(.some(let mask)) = arguments.umask, environmentMask == nil { umask(mask) }
        if changing {
            do {
                settings = try cache.updateSettings { settings in
                    if arguments.reset { settings = NamespaceSettings() }
                    for key in arguments.unset { settings.unset(key) }
                    settings.remember(maxSize: arguments.maxSize, maxAge: arguments.maxAge, failedTTL: arguments.failedTTL)
                    if let umask = arguments.umask { settings.umask = umask }
                }
                if case .some(.some(let mask)) = arguments.umask {
                    CacheUmask.share(namespaceDirectory: cache.directory, mask: environmentMask ?? mask)
                }
            } catch {
                console.error("namespace '\(cache.location.namespace)': " + MaintenanceMessages.describe(error))
                return .cacheUnwritable
            }
        }
        let limits = CacheLimits.resolve(maxSize: nil, maxAge: nil, failedTTL: nil, remembered: settings)
        // What the run applied: IMGCACHE_UMASK, else the remembered one, else the user's.
        let fromEnvironment = environment["IMGCACHE_UMASK"].flatMap { try? CacheUmask.parse($0) }
        let umask: (mask: mode_t, source: String) = fromEnvironment.map { ($0, "IMGCACHE_UMASK") }
            ?? settings.umask.map { ($0, "remembered") } ?? (CacheUmask.userMask, "user")
        guard let remotes = MaintenanceMessages.remotes(cache, environment: environment, console: console) else { return .usage }
        if globals.json {
            var object = JSONObject()
            object.add("namespace", cache.location.namespace.name)
            MaintenanceMessages.addLimits(limits, to: &object)
            object.add("remotes", remotes.remotes.isEmpty ? nil : remotes.listed)
            object.add("remotes_source", remotes.source.rawValue)
            object.add("umask", CacheUmask.text(umask.mask))
            object.add("umask_source", umask.source)
            try console.output(object.serialized)
            return .success
        }
        // The settings asked for are the data: -q does not hide them.
        try console.output("namespace:    \(cache.location.namespace)")
        try console.output("max size:     \(limits.maxSize) (\(limits.maxSizeSource.rawValue))")
        try console.output("max age:      \(limits.maxAge) (\(limits.maxAgeSource.rawValue))")
        try console.output("failed TTL:   \(limits.failedTTL) (\(limits.failedTTLSource.rawValue))")
        try console.output("remotes:      \(remotes.listed) (\(remotes.source.rawValue))")
        try console.output("umask:        \(CacheUmask.text(umask.mask)) (\(umask.source))")
        return .success
    }
}

extension ConfigArguments: Subcommand {
    static var spec: CommandSpec { CommandTable.config }
    static let reportsSettings = true

    static func invocation(_ options: ParsedOptions, globals: GlobalOptions) throws(UsageError) -> Invocation {
        .run(globals, Command(try options.configArguments()))
    }

    static func run(_ command: ConfigCommand) throws(SystemError) -> ExitStatus { try command.run() }
}
