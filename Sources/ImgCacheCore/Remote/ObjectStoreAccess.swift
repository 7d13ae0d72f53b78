/// How requests reach an HTTP object store or an S3 bucket: object URLs under
/// the store's base (or bucket and prefix), the credentials and headers each
/// request carries, and failures explained by what usually causes them.
/// Shared by the cache's remote store and an export's upload.
struct ObjectStoreAccess: Sendable {
    let spec: RemoteSpec
    /// Headers every request carries (a bearer token, S3's session token).
    private let headers: [HTTPHeader]
    private let credentials: Credentials?
    /// libcurl's AWS Signature Version 4 provider string, for S3.
    private let signature: String?

    init(spec: RemoteSpec, environment: Environment) throws(RemoteFailure) {
        self.spec = spec
        var headers: [HTTPHeader] = []
        var credentials: Credentials?
        var signature: String?
        switch spec.kind {
        case .s3(_, _, _, let region):
            guard let key = environment["AWS_ACCESS_KEY_ID"], !key.isEmpty,
                  let secret = environment["AWS_SECRET_ACCESS_KEY"], !secret.isEmpty else {
                throw RemoteFailure("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set for \(spec.identity)")
            }
            credentials = Credentials(user: key, password: secret)
            signature = "aws:amz:\(region):s3"
            if let token = environment["AWS_SESSION_TOKEN"], !token.isEmpty {
                headers.append(HTTPHeader(name: "x-amz-security-token", value: token))
            }
        default:
            if let token = try RemoteBackends.secret(environment: spec.bearerEnvironment, file: spec.bearerFile, from: environment,
                                                      timeout: spec.timeout) {
                headers.append(HTTPHeader(name: "Authorization", value: "Bearer " + token))
            }
            if let pair = try RemoteBackends.secret(environment: spec.userEnvironment, file: nil, from: environment, timeout: spec.timeout) {
                guard let parsed = Credentials(parsing: pair) else { throw RemoteFailure("\(spec.userEnvironment ?? "") is not user:password") }
                credentials = parsed
            }
        }
        self.headers = headers
        self.credentials = credentials
        self.signature = signature
    }

    /// The URL of the object at `path` (slash-separated, relative to the store's base or the bucket's prefix).
    func url(_ path: String) -> String {
        switch spec.kind {
        case .http(let base): return base + "/" + path
        case .s3(let bucket, let prefix, let endpoint, _):
            return endpoint + "/" + bucket + (prefix.isEmpty ? "" : "/" + prefix) + "/" + path
        default: return ""
        }
    }

    /// Whether the store is an S3 bucket.
    var isS3: Bool {
        if case .s3 = spec.kind { return true }
        return false
    }

    /// A request of `method` to `url`, sending `body` (or, for an upload, the file
    /// whose SHA-256 is `upload.sha256`), with the store's credentials and timeouts.
    func request(_ method: DownloadRequest.Method, at url: String, body: [UInt8]? = nil,
                 upload: (path: String, sha256: String)? = nil) throws(RemoteFailure) -> DownloadRequest {
        let remote: RemoteURL
        do { remote = try RemoteURL(parsing: url) } catch { throw RemoteFailure("bad object URL for \(spec.identity)") }
        // An object stays in memory unless it is larger than a transfer keeps
        // there; then it waits in the system's temporary folder until it is read.
        var request = DownloadRequest(url: remote, bodyDirectory: EntryCommitter.memoryOnlyDirectory)
        request.maximumBytes = Int64(RemoteObject.maximumLength)
        request.method = method
        request.uploadBody = body
        request.uploadFile = upload?.path
        request.timeout = spec.timeout
        request.connectTimeout = spec.connectTimeout
        request.maximumRedirects = 0
        request.credentials = credentials
        request.awsSigV4 = signature
        request.headers = headers
        if signature != nil {
            // libcurl 7.88 would sign a PUT as if its body were empty: the hash is given.
            let payload = method == .put ? (upload?.sha256 ?? (try? SHA256.hex(body ?? [])) ?? "UNSIGNED-PAYLOAD") : "UNSIGNED-PAYLOAD"
            request.headers.append(HTTPHeader(name: "x-amz-content-sha256", value: payload))
        }
        return request
    }

    /// The failure, with what usually causes it when the status tells.
    func failure(_ error: DownloadError, writing: Bool) -> RemoteFailure {
        let s3 = isS3
        let hint: String?
        switch error {
        case .httpStatus(403) where s3 && !writing:
            hint = "check the credentials; a bucket also answers 403 for a missing object unless s3:ListBucket is granted"
        case .httpStatus(401) where writing, .httpStatus(403) where writing:
            hint = "a share read-only to this machine, or its credentials do not allow writing"
        case .httpStatus(401), .httpStatus(403): hint = "check the credentials"
        case .httpStatus(404) where writing:
            hint = s3 ? "no such bucket" : "the store does not make folders: nginx needs create_full_put_path on"
        case .httpStatus(405), .httpStatus(501): hint = "the server does not take PUT there: nginx needs dav_methods PUT DELETE"
        case .httpStatus(413): hint = "the store refuses objects this large: nginx client_max_body_size"
        case .httpStatus(507): hint = "the store is full"
        default: hint = nil
        }
        return RemoteFailure(error.reason + (hint.map { " (\($0))" } ?? ""), cause: error)
    }
}
