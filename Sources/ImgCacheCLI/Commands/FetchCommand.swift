import ImgCacheCore

/// `imgcache fetch URL...`: each URL from the cache or the network, then its
/// path, a JSON line, or the image itself (`-o`).
struct FetchCommand {
    let arguments: FetchArguments
    let globals: GlobalOptions
    let cache: DiskCache
    let console: Console

    func run() throws(SystemError) -> ExitStatus {
        let cwd = FileSystem.currentDirectory()
        let readOnly = arguments.readOnlyPaths.map { ReadOnlyCache(directory: $0.hasPrefix("/") ? $0 : cwd + "/" + $0) }
        let fetcher = ImageFetcher(cache: cache, readOnlyCaches: readOnly, settings: arguments.settings,
                                   downloaderConfiguration: arguments.downloads)
        fetcher.log = { [console] line in console.detail(line) }
        defer { fetcher.close() }
        if arguments.downloads.allowInvalidCertificates {
            console.warning("--insecure: TLS certificates and host names are not verified")
        }
        var status = ExitStatus.success
        try fetcher.fetch(arguments.urls) { (index, answer) throws(SystemError) in
            let url = arguments.urls[index]
            let result: FetchResult
            switch answer {
            case .success(let fetched): result = fetched
            case .failure(let error):
                console.error(error.message)
                if globals.json { try console.output(errorJSON(url: url, error: error).serialized) }
                status = worse(status, FetchCommand.exitStatus(for: error))
                return
            }
            if let output = arguments.output {
                do throws(SystemError) {
                    try write(result.path, to: output)
                } catch where output == "-" && error.code == EPIPE_CODE {
                    throw error
                } catch {
                    console.error("cannot write \(output == "-" ? "standard output" : output): \(error.reason)")
                    status = worse(status, .outputFailed)
                }
            } else if globals.json {
                try console.output(result.json.serialized)
            } else if !globals.quiet {
                try console.output(result.path)
            }
        }
        return status
    }

    private func write(_ path: String, to output: String) throws(SystemError) {
        if output == "-" {
            try console.standardOutput.flush()
            try FileSystem.copy(path, to: 1, destinationName: "standard output")
        } else {
            try FileSystem.copyAtomically(path, to: output)
        }
    }

    private func errorJSON(url: String, error: FetchError) -> JSONObject {
        var object = JSONObject()
        object.add("url", RemoteURL.redacted(url))
        object.add("error", error.message)
        return object
    }

    /// A cache that cannot be written outranks a URL that failed: it fails them all.
    private func worse(_ a: ExitStatus, _ b: ExitStatus) -> ExitStatus {
        let rank: [ExitStatus] = [.success, .someFailed, .outputFailed, .unavailable, .cacheUnwritable]
        return (rank.firstIndex(of: a) ?? 0) >= (rank.firstIndex(of: b) ?? 0) ? a : b
    }

    static func exitStatus(for error: FetchError) -> ExitStatus {
        switch error {
        case .cacheUnwritable: return .cacheUnwritable
        case .libraryMissing: return .unavailable
        default: return .someFailed
        }
    }
}
