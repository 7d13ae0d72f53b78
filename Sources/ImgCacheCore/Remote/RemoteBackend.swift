#if canImport(Glibc)
import Glibc
#endif

/// Why a remote store did not answer as asked: it is down, slow, full,
/// refuses the credentials, or answers something that is no object.
public struct RemoteFailure: Error, Equatable, Sendable, CustomStringConvertible {
    public let reason: String
    /// The transfer's failure behind it, when there was one (HTTP and S3 stores).
    public let cause: DownloadError?

    public init(_ reason: String, cause: DownloadError? = nil) {
        self.reason = reason
        self.cause = cause
    }

    public var description: String { reason }

    /// The object is larger than the run takes (`--max-size`): refused from its announced
    /// length or as it came, and no fault of the store.
    static func tooLarge(limit: Int) -> RemoteFailure {
        RemoteFailure("object larger than \(limit) bytes", cause: .tooLarge(limit: Int64(limit)))
    }

    /// Whether this is `tooLarge`: the store answered, the object is over this run's limit.
    public var isObjectTooLarge: Bool {
        if case .tooLarge? = cause { return true }
        return false
    }
}

/// A remote store of entries: read, written if absent, and probed by
/// `remote check`. Answers come on a thread of the backend's; each backend
/// is used by one run.
public protocol RemoteBackend: AnyObject, Sendable {
    var spec: RemoteSpec { get }
    /// The object stored under `key`: its bytes, nil when there is none; one longer than
    /// `limit` bytes fails `tooLarge` with at most about `limit` bytes read. With the answer:
    /// the seconds the store took, from the request being sent (not from its wait in a queue).
    func get(_ key: RemoteKey, limit: Int, completion: @escaping @Sendable (Result<[UInt8]?, RemoteFailure>, Double) -> Void)
    /// Stores `object` under `key`; an object already there is kept unless
    /// `replacing` (it was found damaged). HTTP and S3 stores always replace.
    /// The answer says whether it was written (false: one was there and kept), with the seconds
    /// the store took, as for `get`.
    func put(_ key: RemoteKey, _ object: [UInt8], replacing: Bool,
             completion: @escaping @Sendable (Result<Bool, RemoteFailure>, Double) -> Void)
    /// Removes `key` (the probe of `remote check`).
    func delete(_ key: RemoteKey, completion: @escaping @Sendable (Result<Void, RemoteFailure>) -> Void)
    /// The run gave the store up: requests queued or under way are dropped at
    /// once (answered as failures), and later ones fail without being sent.
    func abandon()
    /// The run was interrupted: a backend whose answers cannot be cancelled one by one
    /// (Redis, one blocking connection) stops waiting for them now, unless writes are
    /// still under way and not `droppingWrites` (they get the interrupted run's grace).
    func interrupt(droppingWrites: Bool)
    /// Ends the backend's work; answers still owed are failures.
    func close()
}

/// Makes the backend a spec names. HTTP and S3 go through `downloads`, the
/// run's libcurl engine (keep-alive, HTTP/2); Redis gets a connection of its own.
public enum RemoteBackends {
    public static func make(_ spec: RemoteSpec, downloads: any DownloadScheduling, environment: Environment) throws(RemoteFailure) -> any RemoteBackend {
        switch spec.kind {
        case .http, .s3:
            return try ObjectStoreRemote(spec: spec, downloads: downloads, environment: environment)
        case .redis, .redisSocket:
            return try RedisRemote(spec: spec, environment: environment)
        }
    }

    /// A secret from the environment variable `name`, or the first line of the file at `path`
    /// (a pipe too: `bearer-file=<(vault read …)`, waited for at most `timeout`). It becomes a
    /// header or a command argument: empty, or holding a control character, it is refused.
    static func secret(environment name: String?, file path: String?, from environment: Environment,
                       timeout: Double) throws(RemoteFailure) -> String? {
        let value: String, source: String
        if let name {
            guard let set = environment[name], !set.isEmpty else { throw RemoteFailure("\(name) is not set") }
            (value, source) = (set, name)
        } else if let path {
            let bytes: [UInt8]
            do { bytes = try FileSystem.readFirstLine(path, limit: 64 * 1024, timeout: timeout) } catch {
                throw RemoteFailure("cannot read \(path): \(error.reason)")
            }
            // The first line, whichever line ends the file uses.
            let line = bytes.prefix { $0 != 0x0A && $0 != 0x0D }
            (value, source) = (String(decoding: line, as: UTF8.self), path)
        } else {
            return nil
        }
        guard !value.isEmpty else { throw RemoteFailure("the secret in \(source) is empty") }
        guard !value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw RemoteFailure("the secret in \(source) holds a line break or another control character")
        }
        return value
    }
}
