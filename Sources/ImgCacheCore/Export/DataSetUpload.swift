#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// `export --to URL`: an export's shards and manifest put in an HTTP (WebDAV)
/// store or an S3 bucket, as `00000.tar`, `00001.tar`, … and `manifest.jsonl`
/// under the store's base URL or the bucket's prefix.
///
/// Each shard is sent whole as it is finished (the next one is written
/// meanwhile) and checked before the next: S3 verifies the signed SHA-256 of
/// the body, and a `HEAD` must show the length sent. An S3 object appears only
/// whole; on a WebDAV store the shard goes to a hidden `.NAME.partial` and is
/// renamed (`MOVE`) to its name once checked. The manifest goes last, once
/// every shard is in place, and the manifest of an earlier export is removed
/// first: a manifest is there only beside the whole data set it describes.
/// Used by the export's thread; each upload runs on a thread of its own.
public final class DataSetUpload {
    private let writer: StoreWriter
    private var access: ObjectStoreAccess { writer.access }
    /// The shard being sent, and its outcome once sent.
    private var running: (thread: WorkerThread, name: String, outcome: BlockingQueue<RemoteFailure?>)?

    /// A new folder of the export's own in $TMPDIR (else /tmp), where shards are written
    /// before they are sent: one being written, one being sent. Removed with the upload.
    public let stagingFolder: String
    /// The lock file of the store (see `init`), held open; -1 when it could not be made.
    private var storeLock: Int32 = -1
    private var storeLockPath = ""

    /// The store as named (`s3://…`, `http(s)://…`), without credentials.
    public var identity: String { access.spec.identity }

    /// The store of `spec`, reached through `downloads`. Redis is no place for a data set.
    public init(spec: RemoteSpec, downloads: any DownloadScheduling, environment: Environment) throws(RemoteFailure) {
        switch spec.kind {
        case .http, .s3: break
        case .redis, .redisSocket:
            throw RemoteFailure("a data set goes to an S3 bucket or an HTTP (WebDAV) store, not to Redis")
        }
        if spec.readOnly { throw RemoteFailure("\(spec.identity) is read-only (|read-only): an export writes to it") }
        writer = StoreWriter(access: try ObjectStoreAccess(spec: spec, environment: environment), downloads: downloads)
        var base = environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        while base.count > 1, base.hasSuffix("/") { base.removeLast() }
        DataSetUpload.removeAbandonedStaging(in: base)
        // Two exports into one store at once would each replace the other's shards and leave a
        // manifest beside shards it does not describe: the store is locked for this machine's
        // exports (a file in TMPDIR named by the store, held with flock until this one ends).
        let lockPath = base + "/imgcache-exporting-\(getuid())-\(MD5.hex(DataSetUpload.lockIdentity(of: spec))).lock"
        // The file is removed by the export that held it as it ends, so that they do not pile up: one
        // taken after its holder removed it is no longer the store's lock, and is opened anew.
        var lock: Int32 = -1
        for _ in 0..<8 {
            lock = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard lock >= 0 else { break }
            if flock(lock, LOCK_EX | LOCK_NB) != 0 {
                let busy = errno == EWOULDBLOCK
                close(lock)
                lock = -1
                if busy { throw RemoteFailure("another export is writing \(spec.identity) now: wait for it to end, or give another prefix") }
                break
            }
            var held = stat(), named = stat()
            if fstat(lock, &held) == 0, lstat(lockPath, &named) == 0, held.st_ino == named.st_ino, held.st_dev == named.st_dev { break }
            close(lock)
            lock = -1
        }
        storeLock = lock
        storeLockPath = lockPath
        var template = Array((base + "/imgcache-export.\(getpid()).XXXXXX").utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            if lock >= 0 { unlink(lockPath); close(lock) }
            throw RemoteFailure("cannot make a folder in \(base) (TMPDIR) for the shards before they are sent: "
                                + SystemError("mkdtemp", path: base, errno: Errno(errno)).reason)
        }
        stagingFolder = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The store as the lock names it: the same however its URL is spelled. The URL's normal form
    /// (case, default port, `.` segments, escapes), its path's empty segments and trailing slash
    /// dropped, and the host as the address it reaches (`localhost` is `127.0.0.1`, and an IPv6
    /// address written out in full is its short form).
    static func lockIdentity(of spec: RemoteSpec) -> String {
        switch spec.kind {
        case .http(let base):
            let normal = URLText.normalized(base)
            guard let schemeEnd = normal.firstRange(of: "://") else { return spec.identity }
            let afterScheme = normal[schemeEnd.upperBound...]
            let authority = afterScheme.prefix { $0 != "/" }
            // A server may decode `%2F`: a path is the same store with its slashes escaped.
            let path = RemoteSpec.segments(afterScheme.dropFirst(authority.count)).joined(separator: "/")
            var host = String(authority), port = ""
            if host.hasPrefix("["), let close = host.firstIndex(of: "]") {
                port = String(host[host.index(after: close)...])
                host = String(host[host.index(after: host.startIndex)..<close])
            } else if let colon = host.lastIndex(of: ":") {
                port = String(host[colon...])
                host = String(host[..<colon])
            }
            // A port with leading zeros is the same port (`:020751` is 20751); the scheme's own, none.
            if let number = Int(port.dropFirst()) {
                let scheme = normal[..<schemeEnd.lowerBound]
                port = (scheme == "http" && number == 80) || (scheme == "https" && number == 443) ? "" : ":" + String(number)
            }
            return normal[..<schemeEnd.upperBound] + "[" + reachedAddress(of: host) + "]" + port + "/" + path
        case .s3(let bucket, let prefix, let endpoint, _):
            let path = prefix.split(separator: "/").joined(separator: "/")
            return "s3 " + URLText.normalized(endpoint) + " " + bucket + "/" + path
        case .redis, .redisSocket:
            return spec.identity
        }
    }

    /// The numeric address `host` resolves to (the least, when it has several); `host` itself
    /// when it does not resolve.
    private static func reachedAddress(of host: String) -> String {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &found) == 0, let first = found else { return host }
        defer { freeaddrinfo(first) }
        var addresses: [String] = []
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let entry = next {
            var name = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if getnameinfo(entry.pointee.ai_addr, entry.pointee.ai_addrlen, &name, socklen_t(name.count), nil, 0, NI_NUMERICHOST) == 0 {
                addresses.append(String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            }
            next = entry.pointee.ai_next
        }
        // An IPv4 address mapped into IPv6 (`::ffff:127.0.0.1`) is that IPv4 address.
        return addresses.map { $0.hasPrefix("::ffff:") && $0.contains(".") ? String($0.dropFirst(7)) : $0 }.min() ?? host
    }

    deinit {
        running?.thread.join()
        FolderShardWriter.removeFlat(stagingFolder)
        if storeLock >= 0 {
            unlink(storeLockPath)
            close(storeLock)
        }
    }

    /// Staging folders (`imgcache-export.PID.XXXXXX`) of this user's exports that ended without removing
    /// theirs (SIGKILL, a crash): their process is gone. A folder of a process still running is left.
    static func removeAbandonedStaging(in base: String) {
        guard let items = try? DirectoryHandle(base).list() else { return }
        for item in items where item.name.hasPrefix("imgcache-export.") {
            let parts = item.name.split(separator: ".")
            guard parts.count == 3, let pid = Int32(parts[1]), pid > 0, pid != getpid(),
                  kill(pid, 0) != 0, errno == ESRCH,
                  case .success(let info) = SystemCall.lstat(base + "/" + item.name),
                  info.st_mode & S_IFMT == S_IFDIR, info.st_uid == geteuid() else { continue }
            FolderShardWriter.removeFlat(base + "/" + item.name)
        }
    }

    /// Before anything is exported: the store's folder is made (WebDAV), and an
    /// earlier manifest removed, which also checks that the store takes writes.
    public func prepare() throws(RemoteFailure) {
        if case .http(let base) = access.spec.kind {
            // Each folder of the base's path, outermost first, as `mkdir -p` would (nginx makes them on PUT).
            let scheme = base.firstRange(of: "://")?.upperBound ?? base.startIndex
            let pathStart = base[scheme...].firstIndex(of: "/") ?? base.endIndex
            let parts = base[pathStart...].split(separator: "/")
            for depth in parts.indices {
                let folder = String(base[..<pathStart]) + "/" + parts[...depth].joined(separator: "/") + "/"
                switch writer.perform(try access.request(.mkcol, at: folder)) {
                // Made, or there already (405); a store that does not make folders says so when written.
                case .success, .failure(.httpStatus(405)), .failure(.httpStatus(501)): continue
                case .failure(let error):
                    throw RemoteFailure("cannot make the folder \(RemoteURL.displayed(folder)): " + access.failure(error, writing: true).reason,
                                        cause: error)
                }
            }
        }
        // A small object written, renamed (WebDAV) and removed: a store that cannot take the export
        // (no bucket, no write permission, no MOVE) says so now, not after the first shard is made.
        let probe = ".imgcache-probe-\(getpid())"
        var put = try access.request(.put, at: access.url(probe), body: Array("imgcache export probe\n".utf8))
        put.retries = 2
        if case .failure(let error) = writer.perform(put) {
            throw RemoteFailure("cannot write to the store: " + access.failure(error, writing: true).reason, cause: error)
        }
        var written = probe
        if !access.isS3 {
            var move = try access.request(.move, at: access.url(probe))
            move.headers += [HTTPHeader(name: "Destination", value: access.url(probe + ".moved")), HTTPHeader(name: "Overwrite", value: "T")]
            switch writer.perform(move) {
            case .success: written = probe + ".moved"
            case .failure(let error):
                try? writer.remove(probe)
                throw StoreWriter.renameFailure(error, access: access)
            }
        }
        try writer.remove(written)
        // An earlier export's manifest goes first: a manifest is only ever beside its whole data set.
        if access.isS3 {
            // S3 answers 204 for a key not there; 404 is the bucket.
            if case .failure(.httpStatus(404)) = writer.perform(try access.request(.delete, at: access.url(DataSetUpload.manifestName))) {
                throw RemoteFailure("no such bucket", cause: .httpStatus(404))
            }
        }
        try writer.remove(DataSetUpload.manifestName)
    }

    /// Takes the finished shard at `path` (removed once sent, or once it failed) to be put
    /// at `name`, after the shard before it was sent and checked.
    func publish(_ path: String, as name: String) throws(RemoteFailure) {
        try wait()
        let outcome = BlockingQueue<RemoteFailure?>()
        let thread = WorkerThread()
        do throws(SystemError) {
            try thread.start { [writer] in
                defer { try? FileSystem.remove(path) }
                do throws(RemoteFailure) { try writer.send(path, as: name) } catch {
                    return outcome.push(error)
                }
                outcome.push(nil)
            }
        } catch {
            try? FileSystem.remove(path)
            throw RemoteFailure("cannot start the upload of \(name): \(error.reason)")
        }
        running = (thread, name, outcome)
    }

    /// After the last shard: waits for it, sends the manifest at `manifest`, then removes
    /// the shards an earlier export left beyond `shardCount`.
    func finish(manifest: String, shardCount: Int) throws(RemoteFailure) {
        try wait()
        try writer.send(manifest, as: DataSetUpload.manifestName)
        // Shards are numbered from 0 without a gap: the first missing one ends the earlier export's.
        for number in shardCount..<(shardCount + 100_000) {
            let name = WebDatasetExport.shardName(number)
            // A hidden upload an export killed outright left there goes too.
            if !access.isS3 { try? writer.remove("." + name + ".partial") }
            guard case .success = writer.perform(try access.request(.head, at: access.url(name))) else { break }
            try writer.remove(name)
            try? writer.remove(ShardStatistics.fileName(number))
        }
    }

    /// The export failed or was stopped: the upload under way is withdrawn and its hidden object removed.
    func abandon() {
        writer.withdraw()
        running?.thread.join()
        running = nil
        writer.removePartials()
    }

    static let manifestName = "manifest.jsonl"

    /// Waits for the shard being sent; its failure is the export's.
    private func wait() throws(RemoteFailure) {
        guard let (thread, name, outcome) = running else { return }
        running = nil
        thread.join()
        if let failure = outcome.pop() { throw RemoteFailure("cannot upload \(name): \(failure.reason)", cause: failure.cause) }
    }
}

/// The requests of an upload, sent from the export's thread and the upload's:
/// every stored property is Sendable (the store's access is a value, the
/// scheduler takes submissions from any thread, the rest is behind mutexes).
private final class StoreWriter: Sendable {
    let access: ObjectStoreAccess
    private let downloads: any DownloadScheduling
    /// The requests under way, withdrawn by `withdraw()`, and whether it was called.
    private let requests = Mutex<(withdrawn: Bool, tickets: Set<DownloadTicket>)>((false, []))
    /// Hidden names holding a WebDAV upload not yet renamed, removed when the export is abandoned.
    private let partials = Mutex<Set<String>>([])

    init(access: ObjectStoreAccess, downloads: any DownloadScheduling) {
        self.access = access
        self.downloads = downloads
    }

    /// Cancels the requests under way, and any sent until `removePartials()`.
    func withdraw() {
        let tickets = requests.withLock { state -> Set<DownloadTicket> in
            state.withdrawn = true
            defer { state.tickets = [] }
            return state.tickets
        }
        for ticket in tickets { downloads.cancel(ticket) }
    }

    /// Once nothing is sent any more: the hidden objects of uploads not renamed are removed.
    func removePartials() {
        requests.withLock { $0.withdrawn = false }
        for name in partials.withLock({ $0 }) { try? remove(name) }
    }

    /// Sends the file at `path` to `name`, checks its length there, and on a WebDAV
    /// store renames it from its hidden name. S3 checks the body against its signed SHA-256.
    func send(_ path: String, as name: String) throws(RemoteFailure) {
        let size: Int64
        do throws(SystemError) {
            guard let status = try FileSystem.status(path) else { throw SystemError("stat", path: path, errno: .noSuchFile) }
            size = status.size
        } catch {
            throw RemoteFailure("cannot read \(path): \(error.reason)")
        }
        var digest = ""
        if access.isS3 {
            do { digest = try SHA256.hex(file: path) } catch { throw RemoteFailure(error.reason) }
        }
        let hidden = access.isS3 ? name : "." + name + ".partial"
        if !access.isS3 { partials.withLock { _ = $0.insert(hidden) } }
        var put = try access.request(.put, at: access.url(hidden), upload: (path, digest))
        put.retries = 2
        if case .failure(let error) = perform(put) { throw access.failure(error, writing: true) }
        var head = try access.request(.head, at: access.url(hidden))
        head.retries = 2
        switch perform(head) {
        case .success(let found):
            guard let length = found.response.announcedLength else {
                throw RemoteFailure("the store does not say the length of \(hidden): it cannot be checked")
            }
            guard length == size else { throw RemoteFailure("the store holds \(length) bytes of \(hidden), \(size) were sent") }
        case .failure(.httpStatus(404)): throw RemoteFailure("\(hidden) is not there after it was written")
        case .failure(let error): throw access.failure(error, writing: false)
        }
        guard !access.isS3 else { return }
        var move = try access.request(.move, at: access.url(hidden))
        move.headers += [HTTPHeader(name: "Destination", value: access.url(name)), HTTPHeader(name: "Overwrite", value: "T")]
        switch perform(move) {
        case .success: partials.withLock { _ = $0.remove(hidden) }
        case .failure(let error): throw StoreWriter.renameFailure(error, access: access)
        }
    }

    /// Why a MOVE failed, with the setting a store without it needs.
    static func renameFailure(_ error: DownloadError, access: ObjectStoreAccess) -> RemoteFailure {
        if case .httpStatus(let status) = error, status == 405 || status == 501 {
            return RemoteFailure("the server does not rename (WebDAV MOVE): nginx needs dav_methods PUT DELETE MKCOL MOVE", cause: error)
        }
        return RemoteFailure("cannot rename an upload into place: " + access.failure(error, writing: true).reason, cause: error)
    }

    /// Removes the object `name`; one not there is removed already.
    func remove(_ name: String) throws(RemoteFailure) {
        switch perform(try access.request(.delete, at: access.url(name))) {
        case .success, .failure(.httpStatus(404)): return
        case .failure(let error): throw access.failure(error, writing: true)
        }
    }

    /// Sends `request` and waits for its answer (each request is bounded by the store's timeouts).
    func perform(_ request: DownloadRequest) -> Result<DownloadedBody, DownloadError> {
        var request = request
        // A shard is large, and a store may take a while to take it in: unless `timeout=` says
        // otherwise, an upload's silence is allowed a minute, not a cache lookup's few seconds.
        if !access.spec.timeoutGiven { request.timeout = max(request.timeout, 60) }
        let answer = BlockingQueue<Result<DownloadedBody, DownloadError>>()
        guard !requests.withLock({ $0.withdrawn }) else { return .failure(.cancelled) }
        let ticket = downloads.submit([DownloadSubmission(request: request) { answer.push($0) }])[0]
        let withdrawn = requests.withLock { state in
            state.tickets.insert(ticket)
            return state.withdrawn
        }
        if withdrawn { downloads.cancel(ticket) }
        let result = answer.pop()
        requests.withLock { _ = $0.tickets.remove(ticket) }
        return result
    }
}
