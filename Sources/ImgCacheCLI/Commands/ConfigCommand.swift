#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCore

/// `imgcache config` arguments.
public struct ConfigArguments: Equatable, Sendable {
    public var maxSize: SizeLimit?
    public var maxAge: AgeLimit?
    public var failedTTL: AgeLimit?
    /// `--umask MASK`: `.some(nil)` for 'none' (forget it).
    public var umask: mode_t??
    /// `--max-decode-time`, `--max-decode-memory`: new limits for each image's decode.
    public var decodeSeconds: Double?
    public var decodeMemory: Int?
    /// `--unset KEY`: settings to forget.
    public var unset: [String] = []
    public var reset = false
    public init() {}
}

/// `imgcache config`: a namespace's remembered limits, shown or set without cleaning.
typealias ConfigCommand = CommandRun<ConfigArguments>

extension ConfigCommand {
    func run() throws(SystemError) -> ExitStatus {
        let inspection = cache.settingsInspection
        var settings = inspection.settings
        let changing = arguments.reset || arguments.maxSize != nil || arguments.maxAge != nil || arguments.failedTTL != nil
            || arguments.umask != nil || !arguments.unset.isEmpty || arguments.decodeSeconds != nil || arguments.decodeMemory != nil
        if !inspection.problems.isEmpty {
            // Shown as it is, never as defaults; a change rewrites the file with what could be used.
            if changing {
                MaintenanceMessages.reportSettings(inspection, of: cache, console: console, instead: "rewritten with what could be used")
            } else {
                MaintenanceMessages.reportSettings(inspection, of: cache, console: console, refusing: "the settings in force are unknown")
            }
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
                    if let seconds = arguments.decodeSeconds { settings.decodeSeconds = seconds }
                    if let memory = arguments.decodeMemory { settings.decodeMemory = memory }
                }
                if case .some(.some(let mask)) = arguments.umask {
                    let applied = environmentMask ?? mask
                    CacheUmask.share(namespaceDirectory: cache.directory, mask: applied)
                    if applied & 0o002 == 0 {
                        console.warning("umask \(CacheUmask.text(applied)) lets every user of this machine replace cached images")
                    }
                }
            } catch {
                console.error("namespace '\(cache.location.namespace)': " + MaintenanceMessages.describe(error))
                return .cacheUnwritable
            }
            if let change = arguments.umask {
                // What is exposed now, with the mask just set (or the user's, after 'none').
                let shared = environmentMask ?? change
                if let exposure = CacheRoot.exposure(of: [cache.location.root, cache.directory], sharedMask: shared) {
                    console.warning(exposure)
                }
            }
        }
        let limits = CacheLimits.resolve(maxSize: nil, maxAge: nil, failedTTL: nil, remembered: settings)
        // What the run applied: IMGCACHE_UMASK, else the remembered one, else the user's.
        let fromEnvironment = environment["IMGCACHE_UMASK"].flatMap { try? CacheUmask.parse($0) }
        let umask: (mask: mode_t, source: String) = fromEnvironment.map { ($0, "IMGCACHE_UMASK") }
            ?? settings.umask.map { ($0, "remembered") } ?? (CacheUmask.userMask, "user")
        guard let remotes = MaintenanceMessages.remotes(cache, environment: environment, console: console) else { return .usage }
        // As a run takes them: a remembered limit above the default only from a file this user alone writes.
        let trusted = DecodeLimits.trusted(settings, writableByUserAlone: NamespaceSettings.writableByUserAlone(in: cache.directory))
        for line in trusted.ignored { console.warning("namespace '\(cache.location.namespace)': " + line) }
        let decode = DecodeLimits.resolve(seconds: nil, memory: nil, remembered: trusted.settings)
        let decodeTimeSource = trusted.settings.decodeSeconds == nil ? "default" : "remembered"
        let decodeMemorySource = trusted.settings.decodeMemory == nil ? "default" : "remembered"
        if globals.json {
            var object = JSONObject()
            object.add("namespace", cache.location.namespace.name)
            MaintenanceMessages.addLimits(limits, to: &object)
            object.add("remotes", remotes.remotes.isEmpty ? nil : remotes.listed)
            object.add("remotes_source", remotes.source.rawValue)
            object.add("umask", CacheUmask.text(umask.mask))
            object.add("umask_source", umask.source)
            object.add("max_decode_time", JSONValue.number(decode.seconds))
            object.add("max_decode_time_source", decodeTimeSource)
            object.add("max_decode_memory", decode.memory)
            object.add("max_decode_memory_source", decodeMemorySource)
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
        try console.output("decode time:  \(TimeSpan(seconds: decode.seconds)) an image (\(decodeTimeSource))")
        let decodeMemory = decode.memoryGiven ? ByteSize.humanisedBinary(decode.memory)
            : "what its size says, at most \(ByteSize.humanisedBinary(decode.memory))"
        try console.output("decode size:  \(decodeMemory) of memory an image (\(decodeMemorySource))")
        return .success
    }
}

extension ConfigArguments: Subcommand {
    var changesUmask: Bool { umask != nil }

    /// The command's name and one-line summary, apart from its table: a run finds its command, and

    /// `help` lists them all, without building every command's table.

    static let name = "config"

    static let summary = "Show or set a namespace's remembered limits"

    static let spec = CommandSpec(
        name: name, summary: summary,
        description: """
            Without options, shows the limits clean applies and the failed TTL fetch uses, \
            each with where it comes from (remembered, or the default), and the remote \
            stores. --max-size, --max-age and --failed-ttl remember new values, as clean \
            --remember does, without cleaning; --umask remembers the permission mask of \
            the namespace's files and folders; --max-decode-time and --max-decode-memory \
            the limits of each image's decode for fetch, prefetch and export; --unset KEY forgets one; --reset forgets every remembered value \
            (limits, mask and remote stores).
            """,
        options: [
            .value(.maxSize, metavar: "SIZE", kind: .text,
                   help: "Remember this size limit for clean (500M, 2G, 1.5GiB, bytes; 'none')"),
            .value(.maxAge, metavar: "AGE", kind: .text, help: "Remember this age limit for clean (30m, 12h, 7d, 2w, 1mo; 'never')"),
            .value(.failedTtl, metavar: "AGE", kind: .text, help: "Remember how long failed URLs are kept (default 24h; 'never')"),
            .value(.umask, metavar: "MASK", kind: .text,
                   help: "Remember the permission mask for what imgcache creates in the namespace, as 002 for a team, and give its folders and shared files those permissions now ('none': the user's umask; IMGCACHE_UMASK overrides)"),
            .value(.maxDecodeTime, metavar: "SECONDS", kind: .text,
                   help: "Remember the time one image's decode may take (default 30s; 100ms to 1h)"),
            .value(.maxDecodeMemory, metavar: "SIZE", kind: .text,
                   help: "Remember the memory every image's decode may take (default: what each image's size says it needs, at most a quarter of this machine's and 2G)"),
            .value(.unset, metavar: "KEY", kind: .choice(ValueKind.Words(NamespaceSettings.keys)), repeatable: true,
                   help: "Forget one remembered setting: \(NamespaceSettings.keys.dropLast().joined(separator: ", ")) or \(NamespaceSettings.keys.last!) (repeatable)"),
            .flag(.reset, help: "Forget every remembered limit and remote store of the namespace"),
        ],
        examples: [
            ("imgcache config", "the limits in force, and where each comes from"),
            ("imgcache -n thumbs config --max-size 500M --max-age 30d", "set them once, for later cleans"),
        ]
    )
    static let reportsSettings = true

    static func invocation(_ options: ParsedOptions, globals: GlobalOptions) throws(UsageError) -> Invocation {
        .run(globals, Command(try options.configArguments()))
    }

    static func run(_ command: ConfigCommand) throws(SystemError) -> ExitStatus { try command.run() }
}

/// `config` arguments from the parsed words.
extension ParsedOptions {
    func configArguments() throws(UsageError) -> ConfigArguments {
        var arguments = ConfigArguments()
        arguments.maxSize = try sizeLimit()
        arguments.maxAge = try ageLimit()
        arguments.failedTTL = try failedTTL()
        arguments.reset = has(.reset)
        (arguments.decodeSeconds, arguments.decodeMemory) = try decodeLimits()
        // The keys were checked against the table's choices.
        arguments.unset = values[.unset] ?? []
        if let text = last(.umask) {
            if text == "none" {
                arguments.umask = .some(nil)
            } else {
                do { arguments.umask = try CacheUmask.parse(text) } catch {
                    throw .invalidValue(option: "--umask", value: text, reason: error.reason)
                }
                if case .some(.some(let mask)) = arguments.umask, let problem = CacheUmask.unrememberable(mask) {
                    throw .invalidValue(option: "--umask", value: text, reason: problem)
                }
            }
        }
        if arguments.reset, arguments.maxSize != nil || arguments.maxAge != nil || arguments.failedTTL != nil || arguments.umask != nil
            || arguments.decodeSeconds != nil || arguments.decodeMemory != nil {
            throw .conflictingOptions("--reset", "new limits", reason: "--reset forgets them")
        }
        return arguments
    }
}
