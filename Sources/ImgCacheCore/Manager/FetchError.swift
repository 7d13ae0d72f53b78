/// Why `fetch` could not answer for one URL.
public enum FetchError: Error, Equatable, Sendable {
    /// The string is not a URL imgcache can fetch.
    case invalidURL(url: String, reason: String)
    /// A table's row (starting on `line` of the list) holds no URL that can be taken.
    case badRow(line: Int, reason: String)
    /// The bytes served are not the pinned ones (`URL#sha256=HEX`): nothing was stored. `inCache`:
    /// the cached bytes are not, and nothing could be downloaded (`--cache-only`, export).
    case pinMismatch(url: String, expected: String, found: String, inCache: Bool = false)
    /// The URL's scheme is not http or https.
    case unsupportedScheme(url: String, scheme: String)
    /// The download failed.
    case download(url: String, DownloadError)
    /// The server answered with something that is not an image.
    case notAnImage(url: String, contentType: String?)
    /// An image of a format imgcache does not store.
    case unsupportedFormat(url: String, ImageFormat)
    /// The image's header does not decode.
    case corruptImage(url: String, reason: String)
    /// The header announces more pixels than `--max-pixels` allows (a decompression bomb, or just too big).
    case tooManyPixels(url: String, width: Int, height: Int, limit: PixelLimit, embedded: ImageHeader.EmbeddedImages? = nil, frames: Int = 1)
    /// The image failed what this run asked beyond the header check: a full
    /// decode (`--verify full`) or a transform. Not remembered: another run
    /// with other options may take the same image.
    case notUsable(url: String, reason: String)
    /// The image is in hand but its variants (`--thumbnail`, `--format`,
    /// `--scale-down`) could not be made; `original` says what became of it.
    case variantsNotMade(url: String, problem: VariantProblem, original: OriginalFate)
    /// The image's decode worker stopped before it answered: a limit
    /// (`DecodeLimits`), a crash, its sandbox; or none could be started.
    /// `original` says what became of the image when it was in hand (nil: it
    /// was being checked, so nothing was stored). Not remembered: the limits
    /// are this run's.
    case decodeStopped(url: String, failure: WorkerFailure, original: OriginalFate?)
    /// The URL failed before for a lasting reason and is on the failed-URL list.
    case blacklisted(url: String, reason: String, failedAt: Double, ttl: AgeLimit, now: Double)
    /// FromCacheOnly (`--cache-only`) and the URL is not cached.
    case notCached(url: String)
    /// Stopped by SIGINT or SIGTERM before it finished.
    case interrupted(url: String)
    /// Not finished when the run's deadline (`--deadline`) came.
    case deadlineReached(url: String, seconds: Double)
    /// The cache folder cannot be written.
    case cacheUnwritable(SystemError)
    /// Not tried: the cache's disk filled up earlier in the run (`error`, the write that found it full).
    case cacheFull(url: String, SystemError)
    /// A C library imgcache needs is not installed.
    case libraryMissing(String)
    /// The downloader could not be started for another reason (no thread, no memory).
    case downloaderUnavailable(String)
    /// A file the run's requests need (certificate authorities, netrc, cookie jar) cannot
    /// be used: found before the first download, with the status the run ends with.
    case requestFileUnusable(message: String, status: ExitStatus)
    /// A refresh found the cached copy replaced while it was being revalidated
    /// (another process stored a newer one); nothing was changed, so asking again answers.
    case revalidationRaced(url: String)

    /// Why an image's variants were not made.
    public enum VariantProblem: Equatable, Sendable {
        /// The original's pixels do not decode.
        case undecodable(String)
        /// A variant would be larger than the pixel limit (`--upscale`, `--fit fill`).
        case tooManyPixels(width: Int, height: Int, limit: PixelLimit)
        /// Making or writing a variant failed.
        case failed(String)
    }

    /// What became of an original whose variants were not made.
    public enum OriginalFate: Equatable, Sendable {
        /// It stays in the cache.
        case kept
        /// It was removed (its pixels do not decode): the next fetch downloads it again.
        case removed
        /// It was not to be kept (`--no-original`): nothing was stored.
        case notKept
    }

    /// Settings a message can name, for callers that let people change them
    /// (a command line names its options).
    public enum Setting: Sendable {
        case pixelLimit, retryFailed, cacheOnly, decodeTime, decodeMemory
    }

    /// The failure's kind, one word for counting (`--stats`): `http_404`, `timeout`,
    /// `connection_refused`, `not_an_image`, `blacklisted`, …
    public var kind: String {
        switch self {
        case .invalidURL: return "invalid_url"
        case .badRow: return "bad_row"
        case .pinMismatch: return "sha256_mismatch"
        case .unsupportedScheme: return "unsupported_scheme"
        case .download(_, let error):
            switch error {
            case .httpStatus(let code): return "http_\(code)"
            case .dns: return "dns"
            case .connectionRefused: return "connection_refused"
            case .connectFailed: return "connect_failed"
            case .connectionReset, .connectionLost: return "connection_lost"
            case .tlsHandshake, .tlsCertificate: return "tls"
            case .timeout: return "timeout"
            case .connectTimeout: return "connect_timeout"
            case .maximumTimeExceeded: return "max_time"
            case .tooLarge: return "too_large"
            case .truncated: return "truncated"
            case .tooManyRedirects: return "too_many_redirects"
            case .redirectedToScheme: return "unsupported_redirect"
            case .notHTTP: return "not_http"
            case .hostGivenUp: return "host_given_up"
            case .privateAddress: return "private_address"
            case .refused(.notAnImage): return "not_an_image"
            case .refused(.unsupported): return "unsupported_format"
            case .refused(.tooManyPixels): return "too_many_pixels"
            case .refused(.inflatesTooMuch): return "decompression_bomb"
            case .cancelled: return "cancelled"
            case .localWrite: return "cache_unwritable"
            case .libraryMissing: return "library_missing"
            case .systemLimit: return "system_limit"
            case .proxyAuthentication: return "proxy_authentication"
            case .invalidURL, .unsupportedScheme: return "invalid_url"
            case .other: return "network"
            }
        case .notAnImage: return "not_an_image"
        case .unsupportedFormat: return "unsupported_format"
        case .corruptImage: return "corrupt_image"
        case .tooManyPixels: return "too_many_pixels"
        case .notUsable: return "not_usable"
        case .variantsNotMade: return "variants_not_made"
        case .decodeStopped(_, let failure, _):
            switch failure.cause {
            case .memoryLimit: return "decode_memory_limit"
            case .timeLimit: return "decode_time_limit"
            case .crashed, .brokenProtocol: return "decoder_crashed"
            case .forbiddenCall: return "decoder_sandboxed"
            case .cannotStart: return "decode_worker_unavailable"
            }
        case .blacklisted: return "blacklisted"
        case .notCached: return "not_cached"
        case .interrupted: return "interrupted"
        case .deadlineReached: return "deadline"
        case .cacheFull: return "cache_full"
        case .cacheUnwritable(let error) where error.exhaustsResources: return "system_limit"
        case .cacheUnwritable: return "cache_unwritable"
        case .libraryMissing: return "library_missing"
        case .downloaderUnavailable: return "downloader_unavailable"
        case .requestFileUnusable: return "request_file_unusable"
        case .revalidationRaced: return "revalidation_raced"
        }
    }

    /// One line for the user: the URL (credentials hidden) and the cause.
    public var message: String { message(naming: { _ in nil }) }

    /// `message`, naming the setting that changes the answer where it applies,
    /// as `name` spells it (nil: not named).
    public func message(naming name: (Setting) -> String?) -> String {
        switch self {
        case .invalidURL(let url, let reason): return "\(RemoteURL.displayed(url)): invalid URL: \(reason)"
        case .deadlineReached(let url, let seconds):
            return "\(RemoteURL.displayed(url)): not done within the run's \(DownloadError.formatSeconds(seconds)) (--deadline)"
        case .cacheFull(let url, let error):
            return "\(RemoteURL.displayed(url)): not tried: the cache's disk is full (\(error.reason)); no more downloads this run"
        case .badRow(let line, let reason): return "line \(line) of the list: \(reason)"
        case .pinMismatch(let url, let expected, let found, let inCache):
            let fate = inCache ? "the cached bytes are not the pinned ones, and nothing is downloaded here" : "nothing was stored"
            return "\(RemoteURL.displayed(url)): sha256 mismatch: expected \(expected), got \(found); \(fate)"
        case .unsupportedScheme(let url, let scheme):
            return "\(RemoteURL.displayed(url)): unsupported scheme '\(scheme)' (only http and https)"
        case .download(let url, let error): return "\(RemoteURL.displayed(url)): \(error.reason)"
        case .notAnImage(let url, let contentType):
            let served = contentType.map { " (served as \($0))" } ?? ""
            return "\(RemoteURL.displayed(url)): not an image\(served); nothing was stored"
        case .unsupportedFormat(let url, let format):
            return "\(RemoteURL.displayed(url)): \(format.displayName) images are not supported; nothing was stored"
        case .corruptImage(let url, let reason): return "\(RemoteURL.displayed(url)): \(reason); nothing was stored"
        case .tooManyPixels(let url, let width, let height, let limit, let embedded, let frames):
            let setting = name(.pixelLimit).map { " (\($0))" } ?? ""
            let counted = PixelLimit.counted(width: width, height: height, frames: frames, embedded: embedded)
            return "\(RemoteURL.displayed(url)): \(counted) is over the limit of \(limit)\(setting); nothing was stored"
        case .blacklisted(let url, let reason, let failedAt, let ttl, let now):
            let until: String
            switch ttl {
            case .never: until = "not tried again until the failed list is cleared"
            case .seconds(let seconds):
                until = "not tried again for \(TimeSpan(seconds: max(1, (failedAt + seconds - now).rounded(.up))).roughDescription)"
            }
            let retry = name(.retryFailed).map { "; \($0) tries it now" } ?? ""
            return "\(RemoteURL.displayed(url)): failed \(Timestamp.age(failedAt, now: now)) (\(reason)); \(until)\(retry)"
        case .notUsable(let url, let reason): return "\(RemoteURL.displayed(url)): \(reason); nothing was stored"
        case .variantsNotMade(let url, let problem, let original):
            let cause: String
            switch problem {
            case .undecodable(let reason): cause = "cannot make its variants: \(reason)"
            case .tooManyPixels(let width, let height, let limit):
                let setting = name(.pixelLimit).map { " (\($0))" } ?? ""
                cause = "a \(width)×\(height) variant is over the limit of \(limit)\(setting)"
            case .failed(let reason): cause = "cannot make its variants: \(reason)"
            }
            let fate: String
            switch original {
            case .kept: fate = "the original stays in the cache"
            case .removed: fate = "the cached original was removed, so the next fetch downloads it again"
            case .notKept: fate = "nothing was stored"
            }
            return "\(RemoteURL.displayed(url)): \(cause); \(fate)"
        case .decodeStopped(let url, let failure, let original):
            var setting: String?
            switch failure.cause {
            case .memoryLimit: setting = name(.decodeMemory)
            case .timeLimit: setting = name(.decodeTime)
            default: setting = nil
            }
            let fate: String
            switch original {
            case .kept?: fate = "the original stays in the cache"
            case .removed?: fate = "the cached original was removed, so the next fetch downloads it again"
            case .notKept?, nil: fate = "nothing was stored"
            }
            return "\(RemoteURL.displayed(url)): \(failure.described(naming: setting)); \(fate)"
        case .notCached(let url): return "\(RemoteURL.displayed(url)): not in the cache" + (name(.cacheOnly).map { " (\($0))" } ?? "")
        case .interrupted(let url): return "\(RemoteURL.displayed(url)): interrupted"
        case .cacheUnwritable(let error) where error.exhaustsResources: return error.description
        case .cacheUnwritable(let error): return "cache not writable: \(error)"
        case .libraryMissing(let message): return message
        case .downloaderUnavailable(let reason): return "cannot start downloading: \(reason)"
        case .requestFileUnusable(let message, _): return message
        case .revalidationRaced(let url): return "\(RemoteURL.displayed(url)): the cached copy changed while it was revalidated"
        }
    }

    /// Whether the failure goes on the failed-URL list, and which later
    /// requests the record answers; nil when it is not remembered.
    ///
    /// Remembered: what the URL itself, or what the server has at it, makes
    /// fail again soon: a body that is not a storable image, HTTP 4xx but 408
    /// and 429, an unsupported scheme after a redirect, a body over the size
    /// limit. Not remembered: transient failures (DNS, connection trouble,
    /// timeouts, 5xx, 408, 429, an interruption), local trouble, a string that
    /// is no URL (no request was made, so remembering it saves none), and
    /// failures that depend on this run's own options (-k, --max-redirects,
    /// --max-pixels, --verify full, a transform).
    ///
    /// Any of them may depend on the request (a login page for a request
    /// without cookies, a 403 without credentials), so a failure answers only
    /// requests with the same fingerprint as `request`; a body over the size
    /// limit answers only those whose limit is no larger.
    public func rememberedScope(request: RequestFingerprint) -> FailedURLStore.Scope? {
        switch self {
        case .notAnImage, .unsupportedFormat, .corruptImage:
            return FailedURLStore.Scope(request: request)
        case .download(_, let error):
            switch error {
            case .httpStatus(let code):
                return (400..<500).contains(code) && code != 408 && code != 429 ? FailedURLStore.Scope(request: request) : nil
            case .tooLarge(let limit): return FailedURLStore.Scope(request: request, sizeLimitUpTo: limit)
            case .refused(.inflatesTooMuch): return FailedURLStore.Scope(request: request)
            case .invalidURL, .unsupportedScheme, .redirectedToScheme: return FailedURLStore.Scope(request: request)
            default: return nil
            }
        case .invalidURL, .badRow, .pinMismatch, .deadlineReached, .unsupportedScheme, .tooManyPixels, .notUsable, .variantsNotMade, .decodeStopped,
             .blacklisted, .notCached, .interrupted, .cacheUnwritable, .cacheFull, .libraryMissing, .downloaderUnavailable, .requestFileUnusable, .revalidationRaced:
            return nil
        }
    }

    /// Where a failure the next fetch tries again is kept (never to refuse a request: an export
    /// says why the row has no image): an image over the pixel limit, which a higher one takes,
    /// or a download that failed in passing (a timeout, a 5xx, a refused connection, a host given
    /// up); nil for the others.
    var retriedScope: FailedURLStore.Scope? {
        switch self {
        case .tooManyPixels, .download(_, .refused(.tooManyPixels)): return .overPixelLimit
        case .download: return rememberedScope(request: .plain) == nil ? .retried : nil
        // A download under way when the run's deadline came (a few: those in flight), so that an
        // export says the deadline stopped it.
        case .deadlineReached: return .retried
        default: return nil
        }
    }

    /// Whether the failure goes on the failed-URL list.
    public var isRemembered: Bool { rememberedScope(request: .plain) != nil }

    /// The short cause recorded on the failed-URL list.
    var recordedReason: String {
        switch self {
        case .download(_, let error): return error.reason
        case .invalidURL(_, let reason): return "invalid URL: \(reason)"
        case .unsupportedScheme(_, let scheme): return "unsupported scheme '\(scheme)'"
        case .notAnImage(_, let contentType): return "not an image" + (contentType.map { " (served as \($0))" } ?? "")
        case .unsupportedFormat(_, let format): return "\(format.displayName) images are not supported"
        case .corruptImage(_, let reason): return reason
        case .tooManyPixels(_, let width, let height, let limit, let embedded, let frames):
            return "\(PixelLimit.counted(width: width, height: height, frames: frames, embedded: embedded)), over \(limit)"
        default: return message
        }
    }
}
