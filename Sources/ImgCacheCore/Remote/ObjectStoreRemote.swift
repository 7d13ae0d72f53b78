import Synchronization

/// An HTTP object store (`GET`/`PUT`/`DELETE` of `<base>/v1/<namespace>/<xx>/<md5>`:
/// nginx with WebDAV's PUT, bazel-remote, any plain store), or S3 through its
/// path-style API with AWS Signature Version 4. Requests go through the run's
/// libcurl engine, so connections are kept alive like the origin's.
final class ObjectStoreRemote: RemoteBackend {
    let spec: RemoteSpec
    private let downloads: any DownloadScheduling
    /// URLs, credentials and the explanation of failures.
    private let access: ObjectStoreAccess
    /// The WebDAV collections known to exist (made, or found there).
    private let collections = Mutex<Set<String>>([])
    /// The requests under way, to withdraw when the store is given up, and whether it was.
    private let outstanding = Mutex<(abandoned: Bool, tickets: Set<DownloadTicket>)>((false, []))

    /// `@unchecked`-free: every stored property is a value or Sendable; the
    /// scheduler is only asked to submit, which it allows from any thread.
    init(spec: RemoteSpec, downloads: any DownloadScheduling, environment: Environment) throws(RemoteFailure) {
        self.spec = spec
        self.downloads = downloads
        access = try ObjectStoreAccess(spec: spec, environment: environment)
    }

    private func request(_ method: DownloadRequest.Method, _ key: RemoteKey, body: [UInt8]? = nil) throws(RemoteFailure) -> DownloadRequest {
        try access.request(method, at: access.url(key.path), body: body)
    }

    func get(_ key: RemoteKey, limit: Int, completion: @escaping @Sendable (Result<[UInt8]?, RemoteFailure>, Double) -> Void) {
        var request: DownloadRequest
        do { request = try self.request(.get, key) } catch { return completion(.failure(error), 0) }
        // Refused from its Content-Length, or as it streams past the limit.
        request.maximumBytes = Int64(min(limit, RemoteObject.maximumLength))
        let access = access
        // Timed from the transfer's start (on the download thread, which both events run on).
        let started = Mutex(0.0)
        // Behind the origin downloads of lookups already answered: a run finishes what it started
        // first, and a slow store's lookups cannot hold every download back.
        var submission = DownloadSubmission(request: request) { result in
            let seconds = max(0, WallClock.monotonic() - started.withLock { $0 })
            switch result {
            case .success(let file):
                do throws(SystemError) { completion(.success(try file.bytes()), seconds) } catch {
                    completion(.failure(RemoteFailure(error.description)), seconds)
                }
            case .failure(.httpStatus(404)): completion(.success(nil), seconds)
            case .failure(.tooLarge(let limit)): completion(.failure(.tooLarge(limit: Int(limit))), seconds)
            case .failure(let error): completion(.failure(access.failure(error, writing: false)), seconds)
            }
        }
        submission.placement = .last
        submission.onEvent = { event in
            if case .started = event { started.withLock { $0 = WallClock.monotonic() } }
        }
        send(submission, otherwise: { completion(.failure(ObjectStoreRemote.givenUp), 0) })
    }

    func put(_ key: RemoteKey, _ object: [UInt8], replacing: Bool,
             completion: @escaping @Sendable (Result<Bool, RemoteFailure>, Double) -> Void) {
        write(.put, key, body: object) { [self] result, first in
            // RFC 4918: a PUT into a collection that does not exist is 409. The collections are made
            // (MKCOL, outermost first) and the PUT sent once more; nginx makes them itself.
            guard case .failure(let failure) = result, case .httpStatus(409)? = failure.cause, case .http(let base) = spec.kind else {
                return completion(result.map { true }, first)
            }
            let parts = key.path.split(separator: "/").dropLast()
            // The store's own folder too (as nginx's create_full_put_path would), not the ones above it.
            let folders = [base + "/"] + parts.indices.map { base + "/" + parts[...$0].joined(separator: "/") + "/" }
            // A folder missing now may have been made earlier in the run and removed since: each is made again.
            collections.withLock { $0.subtract(folders) }
            makeCollections(folders[...], failed: nil) { [self] failure in
                // Put again whatever MKCOL said: a writer beside this one may have made the folder
                // (wsgidav answers the slower of two MKCOLs 500). Only a PUT still refused for want
                // of a folder is the MKCOL's failure.
                write(.put, key, body: object) { result, second in
                    if let failure, case .failure(let again) = result, case .httpStatus(409)? = again.cause {
                        return completion(.failure(failure), first + second)
                    }
                    completion(result.map { true }, first + second)
                }
            }
        }
    }

    /// Makes each WebDAV collection of `folders` that is not known to exist, in order, going on past
    /// a failure (another writer may be making the same one); `then` gets the first failure, if any.
    private func makeCollections(_ folders: ArraySlice<String>, failed: RemoteFailure?,
                                 then: @escaping @Sendable (RemoteFailure?) -> Void) {
        guard let folder = folders.first else { return then(failed) }
        let rest = folders.dropFirst()
        if collections.withLock({ $0.contains(folder) }) { return makeCollections(rest, failed: failed, then: then) }
        let request: DownloadRequest
        do { request = try access.request(.mkcol, at: folder) } catch { return then(error) }
        send(DownloadSubmission(request: request, placement: .first, outlivesInterruption: true) { [self] result in
            switch result {
            // 405: it exists already.
            case .success, .failure(.httpStatus(405)):
                collections.withLock { _ = $0.insert(folder) }
                makeCollections(rest, failed: failed, then: then)
            case .failure(let error):
                let reason = access.failure(error, writing: true).reason
                let failure = RemoteFailure("cannot make the collection \(RemoteURL.displayed(folder)): \(reason)", cause: error)
                makeCollections(rest, failed: failed ?? failure, then: then)
            }
        }, otherwise: { then(ObjectStoreRemote.givenUp) })
    }

    func delete(_ key: RemoteKey, completion: @escaping @Sendable (Result<Void, RemoteFailure>) -> Void) {
        write(.delete, key, body: nil) { result, _ in completion(result) }
    }

    private func write(_ method: DownloadRequest.Method, _ key: RemoteKey, body: [UInt8]?,
                       completion: @escaping @Sendable (Result<Void, RemoteFailure>, Double) -> Void) {
        let request: DownloadRequest
        do { request = try self.request(method, key, body: body) } catch { return completion(.failure(error), 0) }
        let access = access
        // Timed from the transfer's start, as a lookup is: a write's wait in the queue is not the store's.
        let started = Mutex(0.0)
        // Ahead of every download queued, so that writes follow the downloads they share closely;
        // an interrupted run finishes them within its grace period.
        var submission = DownloadSubmission(request: request, placement: .first, outlivesInterruption: true) { result in
            let seconds = max(0, WallClock.monotonic() - started.withLock { $0 })
            switch result {
            case .success: completion(.success(()), seconds)
            // Deleting what is not there is done.
            case .failure(.httpStatus(404)) where method == .delete: completion(.success(()), seconds)
            case .failure(let error): completion(.failure(access.failure(error, writing: true)), seconds)
            }
        }
        submission.onEvent = { event in
            if case .started = event { started.withLock { $0 = WallClock.monotonic() } }
        }
        send(submission, otherwise: { completion(.failure(ObjectStoreRemote.givenUp), 0) })
    }

    static let givenUp = RemoteFailure("given up for this run")

    /// Submits `submission`, keeping its ticket while it is under way; once the
    /// store is given up, `otherwise` answers instead and nothing is sent.
    private func send(_ submission: DownloadSubmission, otherwise: () -> Void) {
        guard !outstanding.withLock({ $0.abandoned }) else { return otherwise() }
        var submission = submission
        let answer = submission.completion
        let box = TicketBox()
        submission.completion = { [self] result in
            outstanding.withLock { state in
                let ticket = box.state.withLock { box in
                    box.answered = true
                    return box.ticket
                }
                if let ticket { state.tickets.remove(ticket) }
            }
            answer(result)
        }
        // Submitted outside the lock: a closed downloader answers at once, on this thread.
        let ticket = downloads.submit([submission])[0]
        let cancelNow: Bool = outstanding.withLock { state in
            let answered = box.state.withLock { box in
                if !box.answered { box.ticket = ticket }
                return box.answered
            }
            guard !answered else { return false }
            state.tickets.insert(ticket)
            // Given up while it was being submitted: withdrawn like the others.
            return state.abandoned
        }
        if cancelNow { downloads.cancel(ticket) }
    }

    func abandon() {
        let tickets = outstanding.withLock { state -> Set<DownloadTicket> in
            state.abandoned = true
            defer { state.tickets = [] }
            return state.tickets
        }
        for ticket in tickets { downloads.cancel(ticket) }
    }

    /// Its lookups are transfers of the run's downloader, cancelled with the others.
    func interrupt(droppingWrites: Bool) {}

    func close() {}
}

/// A submission's ticket once `submit` gives it, and whether it was answered
/// already (taken within the backend's `outstanding` lock, never the other way round).
private final class TicketBox: Sendable {
    let state = Mutex<(ticket: DownloadTicket?, answered: Bool)>((nil, false))
}
