#if canImport(Glibc)
import Glibc
#endif

/// Settings shared by every download of one `Downloader`.
public struct DownloadConfiguration: Equatable, Sendable {
    /// The soft limit of open files (`ulimit -n`); nil when unlimited or unknown.
    public static var openFileLimit: Int? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < rlim_t(Int.max) else { return nil }
        return Int(clamping: limit.rlim_cur)
    }

    /// Of `asked` transfers at once, how many the limit of open files has room for: each takes about
    /// four descriptors while it runs (its socket, its body's file, a lock, a decoder's pipe), beside the
    /// thirty-odd a run holds anyway (the cache's folders and logs, libraries as they load); at least one.
    public static func transfersFitting(_ asked: Int) -> Int {
        guard let limit = openFileLimit else { return asked }
        return max(1, min(asked, (limit - 32) / 4))
    }

    /// Transfers running at once (SDWebImage's maxConcurrentDownloads).
    public var maximumConcurrentDownloads = DownloadConfiguration.defaultConcurrency
    public var order: DownloadOrder = .fifo
    /// `--per-host`: transfers at once to one host (nil: only the overall limit).
    public var perHostConcurrency: Int?
    /// `--rate`: requests a second to one host, spaced evenly (nil: no limit).
    public var perHostRate: Double?
    /// A host that fails to connect this many times in a row is given up for the run.
    public var hostFailuresToGiveUp = 3
    /// Cookie jar file read at start and written back at `close()` (HandleCookies).
    /// Nil: no cookies are kept or sent.
    public var cookieJar: String?
    /// Keep cookies the server sets for this run and send them back, even
    /// without a jar file (HandleCookies).
    public var handleCookies = false
    /// Whether libcurl's cookie engine is on: a jar, or HandleCookies.
    var usesCookies: Bool { handleCookies || cookieJar != nil }
    /// Skip TLS certificate and host name checks (AllowInvalidSSLCertificates).
    public var allowInvalidCertificates = false
    /// Whether every connection to a loopback, private, link-local, multicast or unspecified
    /// address is refused (a server's sources), checked on the address connected, after DNS and
    /// every redirect.
    public var refusesPrivateAddresses = false
    /// `-x`: the proxy every transfer goes through (else libcurl reads http_proxy and the like; "": none at all).
    public var proxy: String?
    /// `--netrc`: credentials for hosts without `-u` from ~/.netrc; `--netrc-file`: from this file.
    public var netrc: Netrc?
    /// Where the certificates of trusted authorities are (`--cacert`,
    /// `--capath` and their environment variables); libcurl's own otherwise.
    public var certificateAuthorities = CertificateAuthorities()

    /// Trusted certificate authorities other than libcurl's built-in ones.
    public struct CertificateAuthorities: Equatable, Sendable {
        /// A PEM file of certificates (CURLOPT_CAINFO).
        public var bundle: String?
        /// A folder of hashed certificate files, as `c_rehash` makes them (CURLOPT_CAPATH).
        public var folder: String?

        public init(bundle: String? = nil, folder: String? = nil) {
            self.bundle = bundle
            self.folder = folder
        }
    }

    /// Where netrc credentials come from.
    public enum Netrc: Equatable, Sendable {
        case home
        case file(String)
    }

    public static let defaultConcurrency = 6

    /// The largest body a transfer keeps in memory before it goes to a
    /// temporary file: 64 MiB shared by the transfers that may run at once,
    /// between 256 KiB and 8 MiB each.
    public var memoryBodyLimit: Int {
        max(256 * 1024, min(8 * 1024 * 1024, 64 * 1024 * 1024 / max(1, maximumConcurrentDownloads)))
    }

    public init() {}
}

/// Something that happened to a download while it ran.
public enum DownloadEvent: Equatable, Sendable {
    /// Body bytes received so far and the announced length, at most ten times a second.
    case progress(received: Int64, expected: Int64?)
    /// A transient failure; the download is tried again after `delay` seconds.
    case retrying(attempt: Int, of: Int, delay: Double, error: DownloadError)
    /// The first attempt left the queue: what follows is the server's time, not the wait for a slot.
    case started
}

/// One request handed to a `Downloader`, with the code that wants its answer.
public struct DownloadSubmission: Sendable {
    public var request: DownloadRequest
    public var priority: DownloadPriority
    /// Before or after every submission of the three priorities, or among them.
    public var placement = DownloadPlacement.byPriority
    /// Left running by `cancelAll()` once started (a write to a remote store, which
    /// an interrupted run finishes within a grace period); `close()` still stops it.
    public var outlivesInterruption = false
    /// Called on the download thread; keep it short.
    public var onEvent: (@Sendable (DownloadEvent) -> Void)?
    /// Called once, on the download thread, with the body file or the failure.
    public var completion: @Sendable (Result<DownloadedBody, DownloadError>) -> Void

    public init(request: DownloadRequest, priority: DownloadPriority = .normal, placement: DownloadPlacement = .byPriority,
                outlivesInterruption: Bool = false,
                onEvent: (@Sendable (DownloadEvent) -> Void)? = nil,
                completion: @escaping @Sendable (Result<DownloadedBody, DownloadError>) -> Void) {
        self.request = request
        self.priority = priority
        self.placement = placement
        self.outlivesInterruption = outlivesInterruption
        self.onEvent = onEvent
        self.completion = completion
    }
}

/// Where a submission waits for a slot relative to the priorities. A run finishes
/// what it started before it starts more: a remote store's lookups (the start of a
/// fetch) wait behind everything, its writes (the end of one) go before everything.
public enum DownloadPlacement: Sendable {
    case last, byPriority, first
}

/// Identifies one submission, for cancelling it.
public struct DownloadTicket: Hashable, Sendable {
    let id: UInt64
}
