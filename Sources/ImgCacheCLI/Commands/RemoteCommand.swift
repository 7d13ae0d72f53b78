import ImgCacheCore

/// `imgcache remote check` arguments.
public struct RemoteArguments: Equatable, Sendable {
    /// `--remote`: the stores to check; nil: the ones fetch would use.
    public var remotes: [RemoteSpec]?
    public var allowInvalidCertificates = false
    public init() {}
}

/// `imgcache remote check`: each remote store fetch would use, probed.
typealias RemoteCommand = CommandRun<RemoteArguments>

extension RemoteCommand {
    func run() throws(SystemError) -> ExitStatus {
        guard let selection = MaintenanceMessages.remotes(cache, given: arguments.remotes, environment: environment,
                                                          console: console, warnUnreadable: true) else { return .usage }
        guard !selection.remotes.isEmpty else {
            console.error("no remote store to check in namespace '\(cache.location.namespace)'")
            console.plain("give --remote URL, set IMGCACHE_REMOTE, or remember one with fetch --remote URL --remember")
            return .usage
        }
        var configuration = RequestFiles.resolved(DownloadConfiguration(), environment: environment)
        configuration.allowInvalidCertificates = arguments.allowInvalidCertificates
        if arguments.allowInvalidCertificates { console.warning("--insecure: TLS certificates and host names are not verified") }
        let downloader: Downloader
        do { downloader = try Downloader(configuration: configuration) } catch {
            console.error("cannot check the remote stores: \(error)")
            return .unavailable
        }
        defer { downloader.close() }
        let health = RemoteHealth(cacheRoot: cache.location.root)
        var status = ExitStatus.success
        for spec in selection.remotes {
            let report = RemoteCheck.run(spec, namespace: cache.location.namespace.name, downloads: downloader,
                                         environment: environment, health: health)
            if !report.passed { status = .someFailed }
            if globals.json {
                try console.output(json(report).serialized)
            } else {
                try console.output(text(report))
            }
            if let failure = report.failure, globals.json { console.error("remote \(spec.identity): \(failure)" + (report.cause?.commandLineHint ?? "")) }
        }
        return status
    }

    private func text(_ report: RemoteCheck.Report) -> String {
        let times = report.steps.map { "\($0.name) \(Self.milliseconds($0.seconds)) ms" }.joined(separator: ", ")
        guard let failure = report.failure else {
            return "\(report.spec.identity): OK (\(times)\(report.spec.readOnly ? "; read-only, not written" : ""))"
        }
        return "\(report.spec.identity): FAILED: \(failure)" + (report.cause?.commandLineHint ?? "")
    }

    private func json(_ report: RemoteCheck.Report) -> JSONObject {
        var object = JSONObject()
        object.add("remote", report.spec.identity)
        object.add("ok", report.passed)
        object.add("read_only", report.spec.readOnly)
        object.add("error", report.failure)
        for name in ["write", "read", "delete"] {
            let seconds = report.steps.first { $0.name == name }?.seconds
            object.add(name + "_seconds", seconds.map { JSONValue.number(($0 * 1000).rounded() / 1000) })
        }
        return object
    }

    private static func milliseconds(_ seconds: Double) -> Int { Int((seconds * 1000).rounded()) }
}

extension RemoteArguments: Subcommand {
    /// The command's name and one-line summary, apart from its table: a run finds its command, and
    /// `help` lists them all, without building every command's table.
    static let name = "remote"
    static let summary = "Check the remote stores: write, read back and remove a probe"
    static let spec = CommandSpec(
        name: name, summary: summary,
        description: """
            'remote check' checks each remote store fetch and prefetch would use (--remote, \
            else $IMGCACHE_REMOTE, else the namespace's remembered ones): it reads an object \
            that is not there (a miss must not look like a failure), then writes a small \
            probe object, reads it back, compares it and removes it; a read-only store is \
            only read. Prints one line per store, OK with each request's time, or FAILED \
            with what went wrong (connection, credentials, a full store, a damaged answer). \
            A store that passes is no longer skipped as down. Exit 0 when every store \
            passes, 1 when one fails, 64 when there is none to check.
            """,
        options: [
            .value(.remote, metavar: "URL", kind: .text, repeatable: true,
                   help: "Check this store instead (repeatable; the same URL|attributes as fetch --remote)"),
            .flag(.insecure, "k", help: "Do not verify TLS certificates or host names (prints a warning)"),
        .value(.cacert, metavar: "FILE", kind: .path,
               help: "Trust the certificate authorities in this PEM file (default: $CURL_CA_BUNDLE, else $SSL_CERT_FILE, else the system's)"),
        .value(.capath, metavar: "DIR", kind: .directory,
               help: "Trust the certificate authorities in this hashed folder, as c_rehash makes (default: $SSL_CERT_DIR)"),
        ],
        operands: [OperandSpec(name: "ACTION", kind: .choice(["check"]), help: "check: write, read and remove a probe object",
                               minimum: 1, maximum: 1)],
        examples: [
            ("imgcache remote check", "the remotes fetch would use"),
            ("imgcache remote check --remote 'redis://cache.lan|timeout=2s'", "one store, before remembering it"),
        ]
    )

    static func invocation(_ options: ParsedOptions, globals: GlobalOptions) throws(UsageError) -> Invocation {
        .run(globals, Command(try options.remoteArguments()))
    }

    static func run(_ command: RemoteCommand) throws(SystemError) -> ExitStatus { try command.run() }
}

/// `remote` arguments from the parsed words.
extension ParsedOptions {
    func remoteArguments() throws(UsageError) -> RemoteArguments {
        var arguments = RemoteArguments()
        if let texts = values[.remote] { arguments.remotes = try Self.remotes(texts, option: "--remote") }
        arguments.allowInvalidCertificates = has(.insecure)
        return arguments
    }
}
