#if canImport(Glibc)
import Glibc
#endif

/// `imgcache remote check`: writes a probe object to a remote store, reads it
/// back, compares it and removes it, so that a store that does not work says
/// so loudly instead of only costing hits. A read-only store is only read.
public enum RemoteCheck {
    /// One request of the check and how long it took.
    public struct Step: Equatable, Sendable {
        public let name: String
        public let seconds: Double
    }

    /// What the check of one store found.
    public struct Report: Equatable, Sendable {
        public let spec: RemoteSpec
        public let steps: [Step]
        /// Why the store does not work; nil when it does.
        public let failure: String?
        /// The transfer's failure behind `failure`, when there was one.
        public var cause: DownloadError? = nil
        public var passed: Bool { failure == nil }
    }

    /// Checks `spec` under `namespace`, using `downloads` for HTTP and S3.
    /// A store that passes is no longer marked down in `health`.
    public static func run(_ spec: RemoteSpec, namespace: String, downloads: any DownloadScheduling,
                           environment: Environment, health: RemoteHealth) -> Report {
        let backend: any RemoteBackend
        do {
            backend = try RemoteBackends.make(spec, downloads: downloads, environment: environment)
        } catch {
            return Report(spec: spec, steps: [], failure: error.reason)
        }
        defer { backend.close() }
        var steps: [Step] = []
        // A key of its own per process and moment, so that two checks never meet.
        let key = RemoteKey(namespace: namespace, digest: MD5.hex("imgcache remote check \(getpid()) \(WallClock.now())"))
        // Each request is bounded by the store's timeout; this bounds a backend that never answers at all.
        let patience = spec.connectTimeout + spec.timeout + 5
        func step<T: Sendable>(_ name: String, _ start: (@escaping @Sendable (Result<T, RemoteFailure>) -> Void) -> Void)
            -> Result<T, RemoteFailure> {
            let answers = BlockingQueue<Result<T, RemoteFailure>>()
            let started = WallClock.monotonic()
            start { answers.push($0) }
            let answer = answers.pop(timeout: patience) ?? .failure(RemoteFailure("no answer in \(Int(patience)) s"))
            steps.append(Step(name: name, seconds: WallClock.monotonic() - started))
            return answer
        }
        func failed(_ what: String, _ failure: RemoteFailure) -> Report {
            Report(spec: spec, steps: steps, failure: "\(what): \(failure.reason)", cause: failure.cause)
        }

        // First a miss, as most reads of a run are: it must be told from a failure.
        switch step("miss", { answer in backend.get(key, limit: RemoteObject.maximumLength) { result, _ in answer(result) } }) {
        case .failure(let failure): return failed("reading a missing object", failure)
        case .success(nil): break
        case .success(.some): return Report(spec: spec, steps: steps, failure: "read: an object where none was written")
        }
        if spec.readOnly {
            health.markUp(spec)
            return Report(spec: spec, steps: steps, failure: nil)
        }
        let payload = Array("imgcache remote check probe, written at \(Timestamp.iso8601(WallClock.now()))\n".utf8)
        let object: [UInt8]
        do {
            object = try RemoteObject(bytes: payload, contentType: "text/plain", url: "imgcache:remote-check", etag: nil,
                                      lastModified: nil, storedAt: WallClock.now()).encoded()
        } catch {
            return Report(spec: spec, steps: [], failure: "cannot make the probe: \(error)")
        }
        if case .failure(let failure) = step("write", { done in backend.put(key, object, replacing: true) { result, _ in done(result.map { _ in () }) } }) {
            return failed("write", failure)
        }
        let readBack = step("read", { answer in backend.get(key, limit: RemoteObject.maximumLength) { result, _ in answer(result) } })
        // Removed whatever the read found, so that a failed check leaves nothing behind.
        let removal = step("delete", { backend.delete(key, completion: $0) })
        switch readBack {
        case .failure(let failure): return failed("read", failure)
        case .success(nil): return Report(spec: spec, steps: steps, failure: "read: the object just written is not there")
        case .success(let data?):
            guard data == object else {
                let reason: String
                do {
                    _ = try RemoteObject(decoding: data)
                    reason = "the object read back differs from the one written"
                } catch {
                    reason = "the object read back is damaged (\(error))"
                }
                return Report(spec: spec, steps: steps, failure: "read: " + reason)
            }
        }
        if case .failure(let failure) = removal { return failed("delete", failure) }
        health.markUp(spec)
        return Report(spec: spec, steps: steps, failure: nil)
    }
}
