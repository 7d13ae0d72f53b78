import ImgCacheCore

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
    static var spec: CommandSpec { CommandTable.remote }

    static func invocation(_ options: ParsedOptions, globals: GlobalOptions) throws(UsageError) -> Invocation {
        .run(globals, Command(try options.remoteArguments()))
    }

    static func run(_ command: RemoteCommand) throws(SystemError) -> ExitStatus { try command.run() }
}
