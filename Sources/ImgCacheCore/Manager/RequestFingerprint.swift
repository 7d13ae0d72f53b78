#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// What of a request, besides its URL, may change the server's answer:
/// headers (`-H`, `--accept`), credentials (`-u`, a netrc file), cookies (a
/// jar's cookies when the run began) and the proxy (`-x`, or those of the
/// environment), in 32 hex digits. A
/// failure the failed-URL list keeps answers only requests with the same
/// fingerprint: a login page served to a request without cookies says
/// nothing of the same URL asked with them. Passwords are never kept, nor
/// anything a guess could be checked against: credentials, netrc files and
/// cookies are digested under the namespace's secret (`CredentialKey`)
/// before they join the digest of everything together.
public struct RequestFingerprint: Hashable, Sendable, CustomStringConvertible {
    /// MD5 of the request's description, lower-case hex.
    public let digest: String

    /// The fingerprint of a request that carries nothing of the user's.
    public static let plain = RequestFingerprint(parts: [])

    private init(parts: [String]) {
        digest = MD5.hex(parts.joined(separator: "\n"))
    }

    /// A request's fingerprint from its digest (as the failed list stores it).
    init(digest: String) {
        self.digest = digest
    }

    /// The fingerprint of the requests made with `settings` and `downloads`,
    /// secrets digested under `key` (read only when there are some).
    init(settings: FetchSettings, downloads: DownloadConfiguration, key: CredentialKey) {
        // A header may be a token (Authorization, Cookie): each is digested too.
        var parts: [String] = settings.headers.map { "header " + key.digest($0.line) }
        if let credentials = settings.credentials {
            parts.append("user " + key.digest(credentials.user))
            parts.append("password " + key.digest(credentials.password))
        }
        switch downloads.netrc {
        case nil: break
        case .home?: parts.append("netrc ~/.netrc " + key.digest(RequestFingerprint.contents(of: (Environment.process["HOME"] ?? "") + "/.netrc")))
        case .file(let path)?: parts.append("netrc " + path + " " + key.digest(RequestFingerprint.contents(of: path)))
        }
        if let jar = downloads.cookieJar {
            parts.append("cookies " + jar + " " + key.digest(RequestFingerprint.cookies(in: jar)))
        } else if downloads.handleCookies {
            parts.append("cookies of the run")
        }
        if let proxy = downloads.proxy {
            // "" (-x ""): no proxy, as a request without one.
            if !proxy.isEmpty { parts.append("proxy " + proxy) }
        } else {
            // The proxies libcurl takes from the environment (each may carry a password): a failure
            // seen through one says nothing of the same URL asked directly, nor the other way round.
            let names = ["http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"]
            let set = names.compactMap { name in Environment.process[name].flatMap { $0.isEmpty ? nil : name + "=" + $0 } }
            if !set.isEmpty { parts.append("environment proxy " + key.digest(set.joined(separator: "\n"))) }
        }
        self = parts.isEmpty ? .plain : RequestFingerprint(parts: parts)
    }

    /// The digest of a file's bytes ("absent" when it cannot be read): a netrc
    /// file that changed makes another request.
    private static func contents(of path: String) -> String {
        guard let bytes = try? FileSystem.readFile(path, limit: 1 << 20) else { return "absent" }
        return MD5.hexString(MD5.digest(bytes))
    }

    /// The digest of the cookies in a jar, one per line in any order, without
    /// its comments (libcurl rewrites the jar after every run, with a header of
    /// its own): a new login makes another request, a rewrite does not.
    private static func cookies(in path: String) -> String {
        guard let bytes = try? FileSystem.readFile(path, limit: 1 << 20) else { return "absent" }
        let lines = String(decoding: bytes, as: UTF8.self).split(whereSeparator: { $0 == "\n" || $0 == "\r" })
            .filter { !$0.isEmpty && (!$0.hasPrefix("#") || $0.hasPrefix("#HttpOnly_")) }
        return MD5.hex(lines.sorted().joined(separator: "\n"))
    }

    /// The fingerprint of a request for `url`, whose user information (`user:password@`) counts as
    /// `-u`'s credentials do: digested under `key`.
    func forURL(_ url: String, key: CredentialKey) -> RequestFingerprint {
        guard let information = URLText.userInfo(of: url) else { return self }
        return RequestFingerprint(parts: [digest, "URL user information " + key.digest(information)])
    }

    public var isPlain: Bool { self == .plain }

    public var description: String { digest }
}

/// A run's request fingerprint, worked out when a failure is first looked up
/// or kept, never for a run of hits: it reads netrc files and cookie jars and
/// may read the namespace's secret. Safe from any thread (a list's reader looks up too).
final class RequestIdentity: Sendable {
    private let settings: FetchSettings
    private let downloads: DownloadConfiguration
    let key: CredentialKey
    private let made = Mutex<RequestFingerprint?>(nil)

    init(settings: FetchSettings, downloads: DownloadConfiguration, key: CredentialKey) {
        self.settings = settings
        self.downloads = downloads
        self.key = key
    }

    /// The run's fingerprint.
    var fingerprint: RequestFingerprint {
        made.withLock { made in
            if let made { return made }
            let fingerprint = RequestFingerprint(settings: settings, downloads: downloads, key: key)
            made = fingerprint
            return fingerprint
        }
    }

    /// The fingerprint of a request for `url`, its own credentials included.
    func fingerprint(for url: String) -> RequestFingerprint {
        fingerprint.forURL(url, key: key)
    }
}
