/// How `ImageFetcher` asks for images: the options and request settings every
/// download of one invocation shares.
public struct FetchSettings: Equatable, Sendable {
    /// SDWebImage's option bits for these requests.
    public var options: ImageOptions = []
    public var headers: [HTTPHeader] = []
    public var credentials: Credentials?
    public var timeout = DownloadRequest.defaultTimeout
    /// `--connect-timeout`: seconds allowed for connecting (else `timeout`).
    public var connectTimeout: Double?
    /// `--max-time`: seconds allowed for a whole transfer, however busy.
    public var maximumTime: Double?
    /// `--netrc`, `--netrc-file`: credentials may come from a netrc file.
    public var usesNetrc = false
    public var maximumRedirects = DownloadRequest.defaultMaximumRedirects
    public var maximumBytes: Int64? = FetchSettings.defaultMaximumBytes
    /// `maximumBytes` unless told otherwise: 1 GiB. A body past it is no image a run wants, and a
    /// server sending bytes for ever would fill the disk.
    public static let defaultMaximumBytes: Int64 = 1 << 30
    public var retries = 0
    /// Images with more pixels are refused from their header, before any decoding.
    public var maximumPixels = PixelLimit.standard
    /// How much of a download is checked before it is stored.
    public var verification: Verification = .header
    /// The time and memory each image's decode may take, in its worker.
    public var decodeLimits = DecodeLimits()
    /// With RefreshCached: revalidate only entries whose freshness ran out
    /// (`--refresh=stale`); fresh ones are hits.
    public var refreshesOnlyStale = false
    /// Thumbnails, conversions and downscaled copies made from the image as
    /// served (`--thumbnail`, `--format`, `--scale-down`), in the order asked:
    /// each is an entry of its own, derived locally from the cached original.
    public var variants: [ImageTransform] = []
    /// False with `--no-original`: the image as served is not kept once its variants are made.
    public var keepsOriginal = true
    /// `--keep-svg`: an inert SVG (no script, event handlers, HTML or references to other documents)
    /// is answered as served, with no raster variants (and kept, even with `--no-original`); any other
    /// SVG gets its variants like any image.
    public var keepsSVG = false
    /// Each answer is copied to an output (`-o`): a download the cache has no room for is handed
    /// over all the same (from `$TMPDIR`), said, rather than lost.
    public var deliversToOutput = false

    /// Whether the variants asked for are made of an image of `format`: not of an SVG passed through
    /// (`inert` is asked only of an SVG under `--keep-svg`).
    func makesVariants(of format: ImageFormat?, inert: () -> Bool = { true }) -> Bool {
        !variants.isEmpty && !(keepsSVG && format == .svg && inert())
    }

    /// Whether requests carry nothing of the user's beyond the URL: no
    /// credentials, headers or cookies. An authorisation refusal of a plain
    /// request says nothing about one that carries them.
    public var isPlainRequest: Bool {
        credentials == nil && headers.isEmpty && !options.contains(.handleCookies) && !usesNetrc
    }

    /// The Accept header sent in place of the default (`--accept`, `-H`), nil
    /// when the default is sent.
    var acceptSent: String? {
        headers.last { $0.name.lowercased() == "accept" }.map { Substring($0.value).trimmingWhitespace }
    }

    /// The cache key of the image `url` serves: its normal form (equivalent
    /// URLs share one entry), after the key filter, with the Accept sent when
    /// it is not the default (a server may answer it with another format: `Vary: Accept`).
    package func cacheKey(for url: String) -> CacheKey {
        let key = keyFilter.key(for: keyedURL(url))
        guard let accept = acceptSent else { return CacheKey(key) }
        return CacheKey(KeyVariant(transform: nil, accept: accept).key(for: key), fileExtension: CacheKey(key).fileExtension)
    }

    /// The cache key of `transform`'s variant of the image `url` serves: the URL's key with the transformer key.
    package func variantKey(for url: String, _ transform: ImageTransform) -> CacheKey {
        transform.cacheKey(for: keyFilter.key(for: keyedURL(url)), accept: acceptSent)
    }

    /// Digests a URL's credentials in keys (set by `ImageFetcher` for its namespace; nil: they are left out).
    public var credentialKey: CredentialKey?

    /// `url` as keys name it: its normal form, its credentials digested (`CredentialKey`).
    func keyedURL(_ url: String) -> String {
        credentialKey?.keyed(url) ?? URLText.normalized(url)
    }

    /// The failed list's key of `url`: its keyed form, without the key filter or a transform (a
    /// failure of one signed URL says nothing of a freshly signed one).
    func failureKey(for url: String) -> CacheKey {
        CacheKey(keyedURL(url), fileExtension: nil)
    }

    /// `--verify`: the header (signature, dimensions; fast), or every pixel of every frame.
    public enum Verification: String, CaseIterable, Equatable, Sendable {
        case header, full
    }
    /// How a URL becomes its cache key (cacheKeyFilter).
    public var keyFilter: CacheKeyFilter = .none
    /// Remote stores, the cache's second level, in the order they are asked.
    public var remotes: [RemoteSpec] = []
    /// `--deadline`: seconds the whole run may take; what is not done then fails.
    public var deadline: Double?
    /// `--shard I/N`: only the list entries of this part are fetched (the rest are other machines').
    public var shard: ListShard?
    /// Local hits are written to the remote stores too (`--remote-reshare`).
    public var remoteReshare = false
    /// How long a failure is remembered; nil: the namespace's remembered
    /// `clean --failed-ttl`, else `FailedURLStore.defaultTTL`.
    public var failedTTL: AgeLimit?

    public init() {}

    /// HighPriority wins over LowPriority, as in SDWebImage's downloader.
    public var priority: DownloadPriority {
        if options.contains(.highPriority) { return .high }
        if options.contains(.lowPriority) { return .low }
        return .normal
    }

    /// The download request for `url`, its body written into `bodyDirectory`.
    func request(for url: RemoteURL, bodyDirectory: String, validators: Validators?) -> DownloadRequest {
        var request = DownloadRequest(url: url, bodyDirectory: bodyDirectory)
        request.headers = headers
        request.credentials = credentials
        request.timeout = timeout
        request.connectTimeout = connectTimeout
        request.maximumTime = maximumTime
        request.maximumRedirects = maximumRedirects
        request.maximumBytes = maximumBytes
        request.retries = retries
        request.validators = validators
        request.bodyCheck = BodyCheck(maximumPixels: maximumPixels)
        return request
    }
}
