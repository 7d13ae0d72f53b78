import ImgCacheCore

/// The arguments of the commands that look after a cache (cache-info, clean,
/// clear, list, remove, config, remote) from the parsed words, with the
/// checks that involve more than one option.
extension ParsedOptions {
    func cacheInfoArguments(globals: GlobalOptions) throws(UsageError) -> CacheInfoArguments {
        var arguments = CacheInfoArguments()
        arguments.allNamespaces = try allNamespaces(globals: globals)
        arguments.zero = has(.zero)
        return arguments
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
        arguments.allNamespaces = try allNamespaces(globals: globals)
        return arguments
    }

    func clearArguments(globals: GlobalOptions) throws(UsageError) -> ClearArguments {
        var arguments = ClearArguments()
        arguments.failedOnly = has(.failed)
        if !operands.isEmpty {
            guard arguments.failedOnly else { throw .requires("URL operands", "--failed") }
            if has(.allNamespaces) { throw .conflictingOptions("URL operands", "--all-namespaces", reason: "a URL's failure is one namespace's") }
            arguments.failedURLs = operands
        }
        arguments.allNamespaces = try allNamespaces(globals: globals)
        return arguments
    }

    func listArguments() -> ListArguments {
        var arguments = ListArguments()
        arguments.pattern = operands.first
        arguments.order = last(.sort).flatMap(ListArguments.Order.init(rawValue:))
        arguments.failed = has(.failed)
        return arguments
    }

    func removeArguments() throws(UsageError) -> RemoveArguments {
        var arguments = RemoveArguments()
        arguments.urls = operands
        arguments.globs = values[.match] ?? []
        arguments.dryRun = has(.dryRun)
        if let text = last(.keyFilter) {
            guard let filter = CacheKeyFilter(parsing: text) else {
                throw .invalidValue(option: "--key-filter", value: text,
                                    reason: "expected strip-query, keep-query=NAME[,NAME...], drop-query=NAME[,NAME...] or none")
            }
            arguments.keyFilter = filter
        }
        if arguments.urls.isEmpty && arguments.globs.isEmpty {
            throw .missingOperand(command: CommandTable.remove.name, operand: "a URL (or --match GLOB)")
        }
        if let empty = arguments.globs.first(where: \.isEmpty) { throw .invalidValue(option: "--match", value: empty, reason: "the pattern is empty") }
        return arguments
    }

    func configArguments() throws(UsageError) -> ConfigArguments {
        var arguments = ConfigArguments()
        arguments.maxSize = try sizeLimit()
        arguments.maxAge = try ageLimit()
        arguments.failedTTL = try failedTTL()
        arguments.reset = has(.reset)
        // The keys were checked against the table's choices.
        arguments.unset = values[.unset] ?? []
        if let text = last(.umask) {
            if text == "none" {
                arguments.umask = .some(nil)
            } else {
                do { arguments.umask = try CacheUmask.parse(text) } catch {
                    throw .invalidValue(option: "--umask", value: text, reason: error.reason)
                }
            }
        }
        if arguments.reset, arguments.maxSize != nil || arguments.maxAge != nil || arguments.failedTTL != nil || arguments.umask != nil {
            throw .conflictingOptions("--reset", "new limits", reason: "--reset forgets them")
        }
        return arguments
    }

    func remoteArguments() throws(UsageError) -> RemoteArguments {
        var arguments = RemoteArguments()
        if let texts = values[.remote] { arguments.remotes = try Self.remotes(texts, option: "--remote") }
        arguments.allowInvalidCertificates = has(.insecure)
        return arguments
    }

    /// `--all-namespaces`, which names every namespace and so cannot go with one.
    private func allNamespaces(globals: GlobalOptions) throws(UsageError) -> Bool {
        guard has(.allNamespaces) else { return false }
        if globals.namespace != nil { throw .conflictingOptions("--all-namespaces", "--namespace", reason: "choose one") }
        return true
    }
}
