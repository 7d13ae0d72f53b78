import ImgCacheCore

/// Turns the words after `imgcache` into an `Invocation`. Pure: no I/O, no
/// environment, no exit. Conventions:
/// - global options go before or after the command;
/// - `--name=value` and `--name value`; `-o value` and `-ovalue`;
/// - short flags bundle (`-qv`); a short option that takes a value ends a bundle;
/// - `--` ends options; a lone `-` is an operand (standard input or output).
public enum CommandLineParser {
    /// The most downloads `-j` allows at once.
    public static let maximumConcurrency = 256

    public static func parse(_ arguments: [String]) throws(UsageError) -> Invocation {
        var state = State()
        try read(arguments, into: &state)
        return try state.invocation()
    }

    /// Where secret values (`-u`'s password) sit among `arguments`: the word's
    /// index and the UTF-8 offset where the value starts, so that the caller
    /// can blank them in the process's own argument memory, as curl does (they
    /// are otherwise readable in /proc/PID/cmdline). Found as far as the words
    /// parse.
    public static func secretLocations(in arguments: [String]) -> [(argument: Int, offset: Int)] {
        var state = State()
        try? read(arguments, into: &state)
        return state.secretLocations
    }

    /// Reads the words into `state`, option by option.
    private static func read(_ arguments: [String], into state: inout State) throws(UsageError) {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if state.endOfOptions || argument == "-" || !argument.hasPrefix("-") {
                if state.command == nil {
                    guard let command = CommandTable.command(named: argument) else {
                        throw .unknownCommand(argument, suggestion: Suggestion.closest(
                            to: argument, among: CommandTable.commands.map(\.name)))
                    }
                    state.command = command
                } else {
                    state.operands.append(argument)
                }
            } else if argument == "--" {
                state.endOfOptions = true
            } else if argument.hasPrefix("--") {
                let body = argument.dropFirst(2)
                let name = body.prefix { $0 != "=" }
                let inline = name.endIndex < body.endIndex ? String(body[body.index(after: name.endIndex)...]) : nil
                let spec = try state.option(long: String(name), spelled: "--" + name)
                if spec.takesValue {
                    if let inline {
                        state.record(spec, value: inline, at: (index - 1, name.utf8.count + 3))
                    } else {
                        guard index < arguments.count else { throw .missingValue(option: spec.longSpelling, metavar: spec.metavar!) }
                        state.record(spec, value: arguments[index], at: (index, 0))
                        index += 1
                    }
                } else {
                    if inline != nil && spec.optionalValue == nil { throw .unexpectedValue(option: spec.longSpelling) }
                    state.record(spec, value: inline, at: nil)
                }
            } else {
                var letters = argument.dropFirst()
                while let letter = letters.first {
                    letters = letters.dropFirst()
                    let spec = try state.option(short: letter)
                    guard spec.takesValue else {
                        state.record(spec, value: nil, at: nil)
                        continue
                    }
                    if !letters.isEmpty {
                        state.record(spec, value: String(letters), at: (index - 1, argument.utf8.count - letters.utf8.count))
                    } else {
                        guard index < arguments.count else { throw .missingValue(option: "-\(letter)", metavar: spec.metavar!) }
                        state.record(spec, value: arguments[index], at: (index, 0))
                        index += 1
                    }
                    break
                }
            }
        }
    }

    /// The `--color` choice among `arguments`, read even when the rest does not
    /// parse, so that the usage error itself honours it. The last one wins.
    public static func requestedColor(in arguments: [String]) -> ColorChoice {
        var choice = ColorChoice.auto
        for (index, argument) in arguments.enumerated() {
            if argument == "--" { break }
            let value: String?
            if argument.hasPrefix("--color=") { value = String(argument.dropFirst("--color=".count)) }
            else if argument == "--color", index + 1 < arguments.count { value = arguments[index + 1] }
            else { value = nil }
            if let parsed = value.flatMap(ColorChoice.init(rawValue:)) { choice = parsed }
        }
        return choice
    }

    /// Everything gathered while reading the words.
    private struct State {
        var command: CommandSpec?
        var values: [OptionName: [String]] = [:]
        var operands: [String] = []
        var endOfOptions = false

        private var visibleOptions: [OptionSpec] { (command?.options ?? []) + CommandTable.globalOptions }

        func option(long: String, spelled: String) throws(UsageError) -> OptionSpec {
            if let spec = visibleOptions.first(where: { $0.long == long }) { return spec }
            let suggestion = Suggestion.closest(to: long, among: visibleOptions.map(\.long))
            throw .unknownOption(spelled, command: command?.name, suggestion: suggestion.map { "--" + $0 })
        }

        func option(short: Character) throws(UsageError) -> OptionSpec {
            if let spec = visibleOptions.first(where: { $0.short == short }) { return spec }
            throw .unknownOption("-\(short)", command: command?.name, suggestion: nil)
        }

        /// Where the values of secret options were found (see `secretLocations`).
        var secretLocations: [(argument: Int, offset: Int)] = []

        mutating func record(_ spec: OptionSpec, value: String?, at location: (argument: Int, offset: Int)?) {
            values[spec.name, default: []].append(value ?? "")
            if spec.name == .user, let location { secretLocations.append(location) }
        }

        func has(_ name: OptionName) -> Bool { values[name] != nil }

        /// The last value given (a later one overrides an earlier one, as in curl).
        func last(_ name: OptionName) -> String? { values[name]?.last }

        func invocation() throws(UsageError) -> Invocation {
            if has(.help) { return .help(command: command?.name) }
            if has(.version) { return .version(verbose: has(.verbose)) }
            guard let command else { throw .missingCommand }
            let globals = try globalOptions()
            switch command.name {
            case CommandTable.fetch.name:
                return .run(globals, .fetch(try fetchArguments(globals: globals)))
            case CommandTable.prefetch.name:
                return .run(globals, .prefetch(try prefetchArguments()))
            case CommandTable.cacheInfo.name:
                try noOperands(command.name)
                var arguments = CacheInfoArguments()
                arguments.allNamespaces = has(.allNamespaces)
                arguments.zero = has(.zero)
                if arguments.allNamespaces, globals.namespace != nil {
                    throw .conflictingOptions("--all-namespaces", "--namespace", reason: "choose one")
                }
                return .run(globals, .cacheInfo(arguments))
            case CommandTable.clean.name:
                try noOperands(command.name)
                return .run(globals, .clean(try cleanArguments(globals: globals)))
            case CommandTable.clear.name:
                var arguments = ClearArguments()
                arguments.failedOnly = has(.failed)
                if !operands.isEmpty {
                    guard arguments.failedOnly else { throw .requires("URL operands", "--failed") }
                    if has(.allNamespaces) { throw .conflictingOptions("URL operands", "--all-namespaces", reason: "a URL's failure is one namespace's") }
                    arguments.failedURLs = operands
                }
                arguments.allNamespaces = has(.allNamespaces)
                if arguments.allNamespaces, globals.namespace != nil {
                    throw .conflictingOptions("--all-namespaces", "--namespace", reason: "choose one")
                }
                return .run(globals, .clear(arguments))
            case CommandTable.list.name:
                var arguments = ListArguments()
                if operands.count > 1 { throw .unexpectedOperand(command: command.name, operand: operands[1]) }
                arguments.pattern = operands.first
                if let text = last(.sort) {
                    guard let order = ListArguments.Order(rawValue: text) else {
                        throw .invalidValue(option: "--sort", value: text, reason: "expected recent, size or url")
                    }
                    arguments.order = order
                }
                arguments.failed = has(.failed)
                return .run(globals, .list(arguments))
            case CommandTable.remove.name:
                var arguments = RemoveArguments()
                arguments.urls = operands
                arguments.globs = values[.match] ?? []
                arguments.dryRun = has(.dryRun)
                if arguments.urls.isEmpty && arguments.globs.isEmpty { throw .missingOperand(command: command.name, operand: "a URL (or --match GLOB)") }
                if let empty = arguments.globs.first(where: \.isEmpty) { throw .invalidValue(option: "--match", value: empty, reason: "the pattern is empty") }
                return .run(globals, .remove(arguments))
            case CommandTable.config.name:
                try noOperands(command.name)
                var arguments = ConfigArguments()
                arguments.maxSize = try sizeLimit()
                arguments.maxAge = try ageLimit()
                arguments.failedTTL = try failedTTL()
                arguments.reset = has(.reset)
                if arguments.reset, arguments.maxSize != nil || arguments.maxAge != nil || arguments.failedTTL != nil {
                    throw .conflictingOptions("--reset", "new limits", reason: "--reset forgets them")
                }
                return .run(globals, .config(arguments))
            case CommandTable.remote.name:
                guard let action = operands.first else { throw .missingOperand(command: command.name, operand: "an action (check)") }
                guard action == "check" else { throw .invalidValue(option: "ACTION", value: action, reason: "expected check") }
                if operands.count > 1 { throw .unexpectedOperand(command: command.name, operand: operands[1]) }
                var arguments = RemoteArguments()
                if let texts = values[.remote] { arguments.remotes = try Self.remotes(texts, option: "--remote") }
                arguments.allowInvalidCertificates = has(.insecure)
                return .run(globals, .remote(arguments))
            case CommandTable.completions.name:
                guard let shell = operands.first else { throw .missingOperand(command: command.name, operand: "a shell name") }
                if operands.count > 1 { throw .unexpectedOperand(command: command.name, operand: operands[1]) }
                guard CompletionScript.shells.contains(shell) else {
                    throw .invalidValue(option: "SHELL", value: shell, reason: "expected bash, zsh or fish")
                }
                return .completions(shell: shell)
            case CommandTable.help.name:
                if has(.man) {
                    if let extra = operands.first { throw .unexpectedOperand(command: command.name, operand: extra) }
                    return .manual
                }
                if operands.count > 1 { throw .unexpectedOperand(command: command.name, operand: operands[1]) }
                guard let topic = operands.first else { return .help(command: nil) }
                guard CommandTable.command(named: topic) != nil else {
                    throw .unknownCommand(topic, suggestion: Suggestion.closest(to: topic, among: CommandTable.commands.map(\.name)))
                }
                return .help(command: topic)
            default:
                preconditionFailure("command '\(command.name)' is in the table but not parsed")
            }
        }

        /// Remote stores from `texts` (each `URL|attributes`, or `none` alone).
        static func remotes(_ texts: [String], option: String) throws(UsageError) -> [RemoteSpec] {
            if texts.contains("none") {
                guard texts.count == 1 else { throw .invalidValue(option: option, value: "none", reason: "'none' stands alone") }
                return []
            }
            var specs: [RemoteSpec] = []
            for text in texts {
                do { specs.append(try RemoteSpec(parsing: text)) } catch {
                    let shown = (try? RemoteSpec(parsing: text))?.description ?? UsageError.visible(text)
                    throw .invalidValue(option: option, value: shown.contains("@") ? "…" : shown, reason: error.description)
                }
            }
            return specs
        }

        func noOperands(_ command: String) throws(UsageError) {
            if let extra = operands.first { throw .unexpectedOperand(command: command, operand: extra) }
        }

        func cleanArguments(globals: GlobalOptions) throws(UsageError) -> CleanArguments {
            var arguments = CleanArguments()
            arguments.maxSize = try sizeLimit()
            arguments.maxAge = try ageLimit()
            arguments.failedTTL = try failedTTL()
            arguments.remember = has(.remember)
            arguments.dryRun = has(.dryRun)
            arguments.allNamespaces = has(.allNamespaces)
            if arguments.remember {
                if arguments.maxSize == nil && arguments.maxAge == nil && arguments.failedTTL == nil {
                    throw .requires("--remember", "--max-size, --max-age or --failed-ttl")
                }
                if arguments.dryRun { throw .conflictingOptions("--remember", "--dry-run", reason: "a dry run changes nothing") }
                if arguments.allNamespaces {
                    throw .conflictingOptions("--remember", "--all-namespaces", reason: "limits are remembered per namespace")
                }
            }
            if arguments.allNamespaces, globals.namespace != nil {
                throw .conflictingOptions("--all-namespaces", "--namespace", reason: "choose one")
            }
            return arguments
        }

        func globalOptions() throws(UsageError) -> GlobalOptions {
            var globals = GlobalOptions()
            if let directory = last(.cacheDir) {
                guard !directory.isEmpty else { throw .invalidValue(option: "--cache-dir", value: directory, reason: "the path is empty") }
                globals.cacheDirectory = directory
            }
            if let name = last(.namespace) {
                do {
                    _ = try Namespace(validating: name)
                } catch {
                    throw .invalidValue(option: "--namespace", value: name, reason: error.description)
                }
                globals.namespace = name
            }
            if let color = last(.color) {
                guard let choice = ColorChoice(rawValue: color) else {
                    throw .invalidValue(option: "--color", value: color, reason: "expected auto, always or never")
                }
                globals.color = choice
            }
            globals.json = has(.json)
            globals.quiet = has(.quiet)
            globals.verbosity = values[.verbose]?.count ?? 0
            if globals.quiet && globals.verbosity > 0 {
                throw .conflictingOptions("--quiet", "--verbose", reason: "choose one")
            }
            return globals
        }

        func fetchArguments(globals: GlobalOptions) throws(UsageError) -> FetchArguments {
            var input = last(.input)
            if let input {
                guard !input.isEmpty else { throw .invalidValue(option: "--input", value: input, reason: "the path is empty") }
                if !operands.isEmpty { throw .conflictingOptions("--input", "URL operands", reason: "the URLs come from the list") }
            } else if operands.contains("-") {
                // `fetch -` reads the list from standard input, as `fetch -i -` does.
                guard operands.count == 1 else { throw .conflictingOptions("-", "URL operands", reason: "'-' reads the URLs from standard input") }
                input = "-"
            } else if operands.isEmpty {
                throw .missingOperand(command: "fetch", operand: "a URL (or --input FILE)")
            }
            let output = last(.output)
            if let output {
                guard !output.isEmpty else { throw .invalidValue(option: "--output", value: output, reason: "the path is empty") }
                if operands.count > 1 || input != nil {
                    throw .conflictingOptions("--output", input != nil ? "a list of URLs" : "several URLs", reason: "--output writes one image")
                }
                if output == "-" && globals.json {
                    throw .conflictingOptions("--output -", "--json", reason: "both write to standard output")
                }
            }
            var arguments = FetchArguments(urls: input == nil ? operands : [], output: output)
            arguments.input = input
            arguments.withURL = has(.withUrl)
            if let directory = last(.outputDir) {
                guard !directory.isEmpty else { throw .invalidValue(option: "--output-dir", value: directory, reason: "the path is empty") }
                if let output { throw .conflictingOptions("--output-dir", "--output \(output)", reason: "--output names the file itself") }
                arguments.outputDirectory = directory
            }
            if arguments.withURL, let output { throw .conflictingOptions("--with-url", "--output \(output)", reason: "--output prints no paths") }
            if arguments.withURL, globals.json { throw .conflictingOptions("--with-url", "--json", reason: "JSON lines carry the URL already") }
            arguments.manager = try managerArguments(defaultPriority: .normal)
            if let output, var transform = arguments.manager.settings.transform {
                try fitTransform(&transform, toOutput: output)
                arguments.manager.settings.transform = transform
            }
            let options = arguments.manager.settings.options
            if options.contains(.cacheMemoryOnly), output == nil {
                throw .requires("--memory-only", "--output (the image is not stored, so it has no path to print)")
            }
            return arguments
        }

        func prefetchArguments() throws(UsageError) -> PrefetchArguments {
            if operands.count > 1 { throw .unexpectedOperand(command: "prefetch", operand: operands[1]) }
            var arguments = PrefetchArguments(input: operands.first)
            if arguments.input == "" { throw .invalidValue(option: "FILE", value: "", reason: "the path is empty") }
            arguments.showProgress = !has(.noProgress)
            arguments.manager = try managerArguments(defaultPriority: .low)
            if arguments.manager.settings.options.contains(.cacheMemoryOnly) {
                throw .conflictingOptions("CacheMemoryOnly", "prefetch", reason: "prefetch only stores images")
            }
            return arguments
        }

        /// The options of `CommandTable.managerOptions` and `downloadOptions`, with
        /// every flag that stands for an option bit folded into `settings.options`.
        func managerArguments(defaultPriority: DownloadPriority) throws(UsageError) -> ManagerArguments {
            var manager = ManagerArguments()
            var options = try imageOptions()
            let flags: [(OptionName, ImageOptions)] = [
                (.refresh, .refreshCached), (.cacheOnly, .fromCacheOnly), (.noCacheRead, .fromLoaderOnly),
                (.retryFailed, .retryFailed), (.memoryOnly, .cacheMemoryOnly), (.progressive, .progressiveDownload),
                (.insecure, .allowInvalidSSLCertificates), (.cookies, .handleCookies),
            ]
            for (flag, option) in flags where has(flag) { options.insert(option) }
            if let text = last(.priority) {
                guard let priority = DownloadPriority(name: text) else {
                    throw .invalidValue(option: "--priority", value: text, reason: "expected high, normal or low")
                }
                options.subtract([.lowPriority, .highPriority])
                switch priority {
                case .high: options.insert(.highPriority)
                case .low: options.insert(.lowPriority)
                case .normal: break
                }
            } else if defaultPriority == .low, options.isDisjoint(with: [.lowPriority, .highPriority]) {
                options.insert(.lowPriority)
            }
            try checkCombination(options)
            manager.settings.transform = try transform(&options)
            manager.settings.options = options
            manager.downloads.allowInvalidCertificates = options.contains(.allowInvalidSSLCertificates)
            manager.downloads.handleCookies = options.contains(.handleCookies)
            if has(.failedTtl) { manager.settings.failedTTL = try failedTTL() }
            if let text = last(.verify) {
                guard let verification = FetchSettings.Verification(rawValue: text) else {
                    throw .invalidValue(option: "--verify", value: text, reason: "expected header or full")
                }
                manager.settings.verification = verification
            }
            if let text = last(.maxPixels) {
                do { manager.settings.maximumPixels = try PixelLimit(parsing: text) } catch {
                    throw .invalidValue(option: "--max-pixels", value: text, reason: error.reason)
                }
            }
            if let text = last(.keyFilter) {
                guard let filter = CacheKeyFilter(parsing: text) else {
                    throw .invalidValue(option: "--key-filter", value: text,
                                        reason: "expected strip-query, keep-query=NAME[,NAME...], drop-query=NAME[,NAME...] or none")
                }
                manager.settings.keyFilter = filter
            }
            for path in values[.readOnlyPath] ?? [] {
                guard !path.isEmpty else { throw .invalidValue(option: "--read-only-path", value: path, reason: "the path is empty") }
                manager.readOnlyPaths.append(path)
            }
            if let texts = values[.remote] {
                manager.remotes = try Self.remotes(texts, option: "--remote")
            }
            manager.settings.remoteReshare = has(.remoteReshare)
            manager.remember = has(.remember)
            if manager.remember {
                guard let remotes = manager.remotes else { throw .requires("--remember", "--remote") }
                if let secret = remotes.first(where: \.hasCredentialsInURL) {
                    throw .invalidValue(option: "--remote", value: secret.description,
                                        reason: "a remembered remote cannot hold a password; use password-env= or user-env=")
                }
            }
            try readDownloadOptions(settings: &manager.settings, configuration: &manager.downloads)
            manager.asksPassword = last(.user).map { !$0.isEmpty && !$0.contains(":") } ?? false
            return manager
        }

        /// `--options`: names or masks, checked.
        func imageOptions() throws(UsageError) -> ImageOptions {
            guard let text = last(.options) else { return [] }
            do {
                return try ImageOptions(parsing: text)
            } catch {
                switch error {
                case .empty:
                    throw .invalidValue(option: "--options", value: text, reason: "expected option names or a mask")
                case .unknownName(let name):
                    let typed = name.contains(where: \.isUppercase) ? ImageOptions.spelled(name) : name.lowercased()
                    let hint = Suggestion.closest(to: typed, among: ImageOptions.named.map { ImageOptions.spelled($0.name) })
                    throw .invalidValue(option: "--options", value: text,
                                        reason: "unknown option '\(name)'" + (hint.map { " (did you mean '\($0)'?)" } ?? ""))
                case .unknownBits(let bits):
                    throw .invalidValue(option: "--options", value: text,
                                        reason: "no option has bits 0x\(String(bits, radix: 16)); the highest is FromLoaderOnly, 0x10000")
                }
            }
        }

        /// `--thumbnail`, `--scale-down[=PIXELS]` (or the ScaleDownLargeImages bit), `--format`, `--quality`.
        func transform(_ options: inout ImageOptions) throws(UsageError) -> ImageTransform? {
            var transform = ImageTransform()
            if let text = last(.thumbnail) {
                guard let box = ImageTransform.BoxSize(parsing: text) else {
                    throw .invalidValue(option: "--thumbnail", value: text, reason: "expected WIDTHxHEIGHT, each from 1 to 65535")
                }
                transform.thumbnail = box
            }
            if let text = last(.scaleDown) {
                options.insert(.scaleDownLargeImages)
                if !text.isEmpty {
                    do { transform.scaleDownLimit = try PixelLimit(parsing: text) } catch {
                        throw .invalidValue(option: "--scale-down", value: text, reason: error.reason)
                    }
                }
            }
            if options.contains(.scaleDownLargeImages), transform.scaleDownLimit == nil {
                transform.scaleDownLimit = ImageTransform.defaultScaleDownLimit
            }
            if has(.transformAnimated) { options.insert(.transformAnimatedImage) }
            transform.transformsAnimations = options.contains(.transformAnimatedImage)
            if let text = last(.format) {
                guard let format = ImageFormat(rawValue: text), ImageEncoder.writableFormats.contains(format) else {
                    throw .invalidValue(option: "--format", value: text, reason: "expected png, jpeg or webp")
                }
                if transform.transformsAnimations, format != .webp {
                    throw .conflictingOptions("--format \(text)", "--transform-animated", reason: "animations are written as WebP")
                }
                transform.format = format
            }
            // --format alone converts: the image is stored in that format, at its size.
            let transforms = transform.thumbnail != nil || transform.scaleDownLimit != nil || transform.format != nil
            if let text = last(.quality) {
                transform.quality = try integer(text, option: "--quality", in: 1...100)
                guard transforms else { throw .requires("--quality", "--thumbnail, --scale-down or --format") }
            }
            return transforms ? transform : nil
        }

        /// A transform writes the format `--output`'s name asks for when no
        /// --format says otherwise; a name that asks for another format than
        /// --format's, or one imgcache cannot write, is refused.
        func fitTransform(_ transform: inout ImageTransform, toOutput output: String) throws(UsageError) {
            guard output != "-", let named = ImageFormat(namedBy: output) else { return }
            if let format = transform.format {
                guard format == named else {
                    throw .conflictingOptions("--output \(output)", "--format \(format.rawValue)",
                                              reason: "the name asks for \(named.displayName)")
                }
                return
            }
            guard ImageEncoder.writableFormats.contains(named) else {
                throw .invalidValue(option: "--output", value: output,
                                    reason: "a transformed image is written as PNG, JPEG or WebP; name it .png, .jpg or .webp")
            }
            if transform.transformsAnimations, named != .webp {
                throw .conflictingOptions("--output \(output)", "--transform-animated", reason: "animations are written as WebP; name it .webp")
            }
            transform.format = named
        }

        /// Refuses options that contradict each other, or need what this version does not have.
        func checkCombination(_ options: ImageOptions) throws(UsageError) {
            if options.contains(.fromCacheOnly) && options.contains(.fromLoaderOnly) {
                throw .conflictingOptions("--cache-only", "--no-cache-read", reason: "one never downloads, the other always does")
            }
            if options.contains(.fromCacheOnly) && options.contains(.refreshCached) {
                throw .conflictingOptions("--cache-only", "--refresh", reason: "a refresh asks the server")
            }
            if options.contains(.fromLoaderOnly) && options.contains(.refreshCached) {
                throw .conflictingOptions("--no-cache-read", "--refresh", reason: "a refresh revalidates the cached copy that --no-cache-read ignores")
            }

        }

        /// `--failed-ttl AGE|never`.
        /// `--max-size` of clean and config, checked.
        func sizeLimit() throws(UsageError) -> SizeLimit? {
            guard let text = last(.maxSize) else { return nil }
            do { return try SizeLimit(parsing: text) } catch {
                throw .invalidValue(option: "--max-size", value: text, reason: error.reason)
            }
        }

        /// A duration option of the downloads, 1 ms to a day.
        func seconds(_ text: String, option: String) throws(UsageError) -> Double {
            let span: TimeSpan
            do { span = try TimeSpan(parsing: text) } catch {
                throw .invalidValue(option: option, value: text, reason: error.reason)
            }
            guard span.seconds >= 0.001, span.seconds <= 86_400 else {
                throw .invalidValue(option: option, value: text, reason: "expected between 1ms and 1d")
            }
            return span.seconds
        }

        /// `--max-age` of clean and config, checked.
        func ageLimit() throws(UsageError) -> AgeLimit? {
            guard let text = last(.maxAge) else { return nil }
            do { return try AgeLimit(parsing: text) } catch {
                throw .invalidValue(option: "--max-age", value: text, reason: error.reason)
            }
        }

        func failedTTL() throws(UsageError) -> AgeLimit? {
            guard let text = last(.failedTtl) else { return nil }
            do { return try AgeLimit(parsing: text) } catch {
                throw .invalidValue(option: "--failed-ttl", value: text, reason: error.reason)
            }
        }

        /// The options of `CommandTable.downloadOptions`, checked.
        func readDownloadOptions(settings: inout FetchSettings, configuration: inout DownloadConfiguration) throws(UsageError) {
            if let text = last(.concurrency) {
                configuration.maximumConcurrentDownloads = try integer(text, option: "--concurrency", in: 1...CommandLineParser.maximumConcurrency)
            }
            if let text = last(.timeout) {
                let span: TimeSpan
                do { span = try TimeSpan(parsing: text) } catch {
                    throw .invalidValue(option: "--timeout", value: text, reason: error.reason)
                }
                guard span.seconds >= 0.001, span.seconds <= 86_400 else {
                    throw .invalidValue(option: "--timeout", value: text, reason: "expected between 1ms and 1d")
                }
                settings.timeout = span.seconds
            }
            if let text = last(.connectTimeout) { settings.connectTimeout = try seconds(text, option: "--connect-timeout") }
            if let text = last(.maxTime) { settings.maximumTime = try seconds(text, option: "--max-time") }
            if has(.netrc) { configuration.netrc = .home }
            if let path = last(.netrcFile) {
                guard !path.isEmpty else { throw .invalidValue(option: "--netrc-file", value: path, reason: "the path is empty") }
                configuration.netrc = .file(path)
            }
            settings.usesNetrc = configuration.netrc != nil
            if let proxy = last(.proxy) {
                let schemes = ["http://", "https://", "socks4://", "socks4a://", "socks5://", "socks5h://"]
                guard schemes.contains(where: { proxy.lowercased().hasPrefix($0) }) || !proxy.contains("://") else {
                    throw .invalidValue(option: "--proxy", value: proxy, reason: "expected http://, https://, socks4://, socks5:// or socks5h://")
                }
                guard !proxy.isEmpty, !proxy.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) else {
                    throw .invalidValue(option: "--proxy", value: UsageError.visible(proxy), reason: "expected a proxy URL without spaces")
                }
                configuration.proxy = proxy
            }
            if let text = last(.retries) { settings.retries = try integer(text, option: "--retries", in: 0...100) }
            if let text = last(.maxRedirects) { settings.maximumRedirects = try integer(text, option: "--max-redirects", in: 0...100) }
            if let text = last(.order) {
                guard let order = DownloadOrder(rawValue: text) else {
                    throw .invalidValue(option: "--order", value: text, reason: "expected fifo or lifo")
                }
                configuration.order = order
            }
            for line in values[.header] ?? [] {
                do {
                    settings.headers.append(try HTTPHeader(parsing: line))
                } catch {
                    throw .invalidValue(option: "--header", value: line, reason: error.reason)
                }
            }
            if let text = last(.user) {
                // The value is a secret: the message never repeats it.
                guard let credentials = Credentials(parsing: text) ?? (text.isEmpty ? nil : Credentials(user: text, password: "")) else {
                    throw .invalidValue(option: "--user", value: "…", reason: "expected USER:PASSWORD, or USER to be asked the password")
                }
                guard !text.utf8.contains(where: { $0 < 0x20 || $0 == 0x7f }) else {
                    throw .invalidValue(option: "--user", value: "…", reason: "control characters are not allowed")
                }
                settings.credentials = credentials
            }
            if let path = last(.cookies) {
                guard !path.isEmpty else { throw .invalidValue(option: "--cookies", value: path, reason: "the path is empty") }
                configuration.cookieJar = path
            }
            if let text = last(.maxSize) {
                let size: ByteSize
                do { size = try ByteSize(parsing: text) } catch {
                    throw .invalidValue(option: "--max-size", value: text, reason: error.reason)
                }
                guard size.bytes > 0 else { throw .invalidValue(option: "--max-size", value: text, reason: "must be more than 0") }
                settings.maximumBytes = size.bytes
            }
        }

        func integer(_ text: String, option: String, in range: ClosedRange<Int>) throws(UsageError) -> Int {
            guard let value = Int(text), range.contains(value) else {
                throw .invalidValue(option: option, value: text,
                                    reason: "expected a whole number from \(range.lowerBound) to \(range.upperBound)")
            }
            return value
        }
    }
}
