import ImgCacheCore

/// The arguments of the commands that look after a cache (cache-info, clean,
/// clear, list, remove, config, remote) from the parsed words, with the
/// checks that involve more than one option.
extension ParsedOptions {







    /// `--all-namespaces`, which names every namespace and so cannot go with one.
    func allNamespaces(globals: GlobalOptions) throws(UsageError) -> Bool {
        guard has(.allNamespaces) else { return false }
        if globals.namespace != nil { throw .conflictingOptions("--all-namespaces", "--namespace", reason: "choose one") }
        return true
    }
}
