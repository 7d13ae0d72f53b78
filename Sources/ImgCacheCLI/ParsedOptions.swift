import ImgCacheCore

/// The words of a command line, read against the command table: the command,
/// each option's values by name, the operands. The typed readers below, and
/// each command's `Parsing/` file, turn them into arguments.
struct ParsedOptions {
        var command: CommandSpec?
        var values: [OptionName: [String]] = [:]
        var operands: [String] = []
        var endOfOptions = false

        private var visibleOptions: [OptionSpec] { (command?.options ?? []) + CommandTable.globalOptions }

        func option(long: String, spelled: String) throws(UsageError) -> OptionSpec {
            if let spec = visibleOptions.first(where: { $0.long == long }) { return spec }
            // Read so that the command can say why it does not take it.
            if let spec = command?.refusedOptions.first(where: { $0.long == long }) { return spec }
            // Before the command: said as such, with the commands that take it.
            if command == nil {
                let taking = CommandTable.commands.filter { $0.options.contains { $0.long == long } }.map(\.name)
                if !taking.isEmpty { throw .optionBeforeCommand(spelled, commands: taking) }
            }
            if let advice = ParsedOptions.habits["--" + long] { throw .habitOption(spelled, command: command?.name, advice: advice) }
            let suggestion = Suggestion.closest(to: long, among: visibleOptions.map(\.long))
            throw .unknownOption(spelled, command: command?.name, suggestion: suggestion.map { "--" + $0 })
        }

        func option(short: Character) throws(UsageError) -> OptionSpec {
            if let spec = visibleOptions.first(where: { $0.short == short }) { return spec }
            if let advice = ParsedOptions.habits["-\(short)"] { throw .habitOption("-\(short)", command: command?.name, advice: advice) }
            throw .unknownOption("-\(short)", command: command?.name, suggestion: nil)
        }

        /// curl's and wget's options that imgcache does not take, and what to give instead: a
        /// script moved from curl meets them first.
        static let habits: [String: String] = [
            "-s": "use -q (--quiet)", "--silent": "use -q (--quiet)",
            "-S": "errors are always shown (-q hides the rest)", "--show-error": "errors are always shown (-q hides the rest)",
            "-L": "redirects are followed already (--max-redirects N limits them)",
            "--location": "redirects are followed already (--max-redirects N limits them)",
            "-O": "use -o FILE, or --output-dir DIR for copies named from their URLs",
            "--remote-name": "use -o FILE, or --output-dir DIR for copies named from their URLs",
            "-f": "an HTTP error fails its URL already (exit 1)", "--fail": "an HTTP error fails its URL already (exit 1)",
            "-A": "use -H 'User-Agent: NAME'", "--user-agent": "use -H 'User-Agent: NAME'",
            "--compressed": "every encoding libcurl decodes is asked for and decoded already",
            "-Z": "downloads run in parallel already (-j N of them)", "--parallel": "downloads run in parallel already (-j N of them)",
            "--create-dirs": "-o and --output-dir make the folders they need", "--noproxy": "use -x \"\" for no proxy, or no_proxy in the environment",
            "--referer": "use -H 'Referer: URL'", "-e": "use -H 'Referer: URL'",
            "--retry-max-time": "use --deadline, which ends the whole run", "-C": "a transfer cut short is downloaded again, whole",
            "-I": "use imgcache --json fetch URL for an image's metadata (size, format, type, cache)", "-w": "use --json, a line per URL",
            // wget's.
            "-P": "use --output-dir DIR", "-T": "use --timeout SECONDS", "-t": "use --retries N",
            "--no-check-certificate": "use -k (--insecure)", "--tries": "use --retries N",
            "-nv": "imgcache prints errors and a summary only (-q: errors only)", "-nc": "a cached image is not downloaded again already",
            "-nd": "--output-dir puts every copy in one folder already", "-np": "imgcache downloads only the URLs given",
            "-nH": "--output-dir puts every copy in one folder already",
            // fetch's own option, given to a command that takes its list as an argument.
            "-i": "give the list itself: imgcache prefetch FILE (or - for stdin); -i FILE is fetch's",
            "--input-file": "give the list itself: imgcache prefetch FILE (or - for stdin); -i FILE is fetch's",
            "--input": "give the list itself: imgcache prefetch FILE (or - for stdin); -i FILE is fetch's",
            "--head": "use imgcache --json fetch URL for an image's metadata (size, format, type, cache)",
        ]

        /// Where secrets were found in the words (see `secretLocations`): a byte
        /// range of one word (`length` nil: to its end).
        var secretLocations: [(argument: Int, offset: Int, length: Int?)] = []

        mutating func record(_ spec: OptionSpec, value: String?, at location: (argument: Int, offset: Int)?) {
            values[spec.name, default: []].append(value ?? "")
            guard let location, let value else { return }
            switch spec.name {
            case .user: secretLocations.append((location.argument, location.offset, nil))
            case .remote, .proxy: recordPasswords(in: value, argument: location.argument, offset: location.offset)
            default: break
            }
        }

        /// Notes the passwords of the URLs in word `argument` (`text` from byte `offset`).
        mutating func recordPasswords(in text: String, argument: Int, offset: Int) {
            for range in ParsedOptions.passwordRanges(in: text) {
                secretLocations.append((argument, offset + range.offset, range.length))
            }
        }

        func has(_ name: OptionName) -> Bool { values[name] != nil }

        /// The last value given (a later one overrides an earlier one, as in curl).
        func last(_ name: OptionName) -> String? { values[name]?.last }
        /// Every value of `name`, in order, as one comma-separated list; nil when it was not given.
        func joined(_ name: OptionName) -> String? { values[name].map { $0.joined(separator: ",") } }

}

extension ParsedOptions {
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
        // Choices were checked against the table (`checkAgainstTable`).
        if let choice = last(.color).flatMap(ColorChoice.init(rawValue:)) { globals.color = choice }
        globals.json = has(.json)
        globals.quiet = has(.quiet)
        globals.verbosity = values[.verbose]?.count ?? 0
        if globals.quiet && globals.verbosity > 0 {
            throw .conflictingOptions("--quiet", "--verbose", reason: "choose one")
        }
        return globals
    }

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
            // Past what any duration may be: the range of this option is what helps.
            throw .invalidValue(option: option, value: text, reason: error == TimeSpan.tooLong ? "expected between 1ms and 1d" : error.reason)
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
    func integer(_ text: String, option: String, in range: ClosedRange<Int>) throws(UsageError) -> Int {
        guard let value = Int(text), range.contains(value) else {
            throw .invalidValue(option: option, value: text,
                                reason: "expected a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }
}

extension ParsedOptions {
    /// The byte ranges of the passwords in the URLs of `text` (`scheme://user:password@host`),
    /// however many URLs it holds (a `--remote` list, with `|` attributes).
    static func passwordRanges(in text: String) -> [(offset: Int, length: Int)] {
        let bytes = Array(text.utf8)
        var ranges: [(offset: Int, length: Int)] = []
        var index = 0
        while index + 3 <= bytes.count {
            guard bytes[index] == UInt8(ascii: ":"), bytes[index + 1] == UInt8(ascii: "/"), bytes[index + 2] == UInt8(ascii: "/") else {
                index += 1
                continue
            }
            let start = index + 3
            var end = start
            // A switch, not a Set: the first Set<UInt8> of a run costs its type's set-up (some 100,000 instructions), on every run that names a URL.
            func stops(_ byte: UInt8) -> Bool {
                switch byte {
                case UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#"), UInt8(ascii: " "), UInt8(ascii: "|"), UInt8(ascii: "\t"), UInt8(ascii: "\n"): return true
                default: return false
                }
            }
            while end < bytes.count, !stops(bytes[end]) { end += 1 }
            if let at = bytes[start..<end].lastIndex(of: UInt8(ascii: "@")),
               let colon = bytes[start..<at].firstIndex(of: UInt8(ascii: ":")), colon + 1 < at {
                ranges.append((colon + 1, at - colon - 1))
            }
            index = end
        }
        return ranges
    }
}
