import ImgCacheCore

/// `clean` arguments from the parsed words (the other maintenance commands are
/// read where the command is dispatched).
extension ParsedOptions {
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

}
