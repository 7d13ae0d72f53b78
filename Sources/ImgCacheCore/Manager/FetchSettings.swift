/// How `ImageFetcher` asks for images: the request options every download of
/// one invocation shares, and whether cached copies are revalidated.
public struct FetchSettings: Equatable, Sendable {
    public var headers: [HTTPHeader] = []
    public var credentials: Credentials?
    public var timeout = DownloadRequest.defaultTimeout
    public var maximumRedirects = DownloadRequest.defaultMaximumRedirects
    public var maximumBytes: Int64?
    public var retries = 0
    public var priority: DownloadPriority = .normal
    /// Revalidate cached entries with their ETag / Last-Modified (RefreshCached).
    public var refreshCached = false
    /// How a URL becomes its cache key (cacheKeyFilter).
    public var keyFilter: CacheKeyFilter = .none

    public init() {}

    /// The download request for `url`, its body written into `bodyDirectory`.
    func request(for url: RemoteURL, bodyDirectory: String, validators: Validators?) -> DownloadRequest {
        var request = DownloadRequest(url: url, bodyDirectory: bodyDirectory)
        request.headers = headers
        request.credentials = credentials
        request.timeout = timeout
        request.maximumRedirects = maximumRedirects
        request.maximumBytes = maximumBytes
        request.retries = retries
        request.validators = validators
        return request
    }
}
