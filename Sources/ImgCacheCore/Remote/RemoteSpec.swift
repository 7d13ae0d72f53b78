/// One remote store as configured: its URL and the attributes after it,
/// `URL|attribute|name=value…` (as ccache writes remote storage).
///
/// - `http://host[:port]/prefix`, `https://…`: objects at `<prefix>/v1/<namespace>/<xx>/<md5>`
///   (nginx with `dav_methods PUT DELETE`, bazel-remote, any WebDAV or plain HTTP store).
/// - `redis://[user:password@]host[:port][/db]`, `redis+unix:/path/to/socket[?db=N]`:
///   keys `imgcache:v1:<namespace>:<md5>`.
/// - `s3://bucket/prefix?endpoint=URL&region=REGION`: path-style requests signed
///   with AWS Signature Version 4, credentials from `AWS_ACCESS_KEY_ID`,
///   `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`.
///
/// Attributes: `read-only`; `keep-if-slow` (never given up for being slower
/// than the origin); `connect-timeout=1s`; `timeout=5s` (each request
/// as a whole); `ttl=30d` (Redis keys); `bearer-env=NAME` or `bearer-file=PATH`
/// (an `Authorization: Bearer` token); `user-env=NAME` (`user:password` for
/// basic authentication); `password-env=NAME` (Redis). Credentials never need
/// to be in the URL, and are never printed.
public struct RemoteSpec: Equatable, Sendable, CustomStringConvertible {
    /// What kind of store, and where.
    public enum Kind: Equatable, Sendable {
        /// An HTTP(S) base URL, without a trailing slash.
        case http(base: String)
        case redis(host: String, port: Int, database: Int, user: String?, password: String?)
        case redisSocket(path: String, database: Int)
        case s3(bucket: String, prefix: String, endpoint: String, region: String)
    }

    /// The text as given (credentials in it are redacted in `description`).
    public let text: String
    public let kind: Kind
    public var readOnly = false
    /// Kept for the whole run even when its lookups are slower than the origin's downloads
    /// (a fleet's shared store, whose writes serve the other machines).
    public var keepIfSlow = false
    public var connectTimeout = 1.0
    public var timeout = 5.0
    /// `timeout=` was given (an export's uploads otherwise allow a minute of silence).
    public var timeoutGiven = false
    /// The attributes given after the URL, by name.
    public private(set) var attributeNames: Set<String> = []
    /// How long Redis keeps an object (seconds).
    public var timeToLive = 30.0 * 86_400
    public var bearerEnvironment: String?
    public var bearerFile: String?
    public var userEnvironment: String?
    public var passwordEnvironment: String?

    public init(parsing text: String) throws(ValueError) {
        let parts = text.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        let url = parts[0]
        guard !url.isEmpty else { throw .invalid("the remote's URL is empty") }
        guard !url.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) else {
            throw .invalid("the remote's URL contains a space or a control character")
        }
        self.text = text
        kind = try RemoteSpec.kind(of: url)
        var given: Set<String> = []
        for attribute in parts.dropFirst() {
            let pair = attribute.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            let name = pair[0], value = pair.count == 2 ? pair[1] : nil
            // Given twice, one would silently win: refused, as a typo usually is.
            guard given.insert(name).inserted else { throw .invalid("attribute \(name) is given twice") }
            attributeNames.insert(name)
            func required() throws(ValueError) -> String {
                guard let value, !value.isEmpty else { throw .invalid("attribute \(name) needs a value (\(name)=...)") }
                return value
            }
            func seconds() throws(ValueError) -> Double {
                let text = try required()
                // Bounded: a timeout under a millisecond would mean none to hiredis, and a huge one cannot be counted.
                guard let span = try? TimeSpan(parsing: text), span.seconds >= 0.001, span.seconds <= 10 * 366 * 86_400 else {
                    throw .invalid("bad \(name) '\(text)' (expected a time from 1ms to 10 years, such as 500ms, 2s, 1m, 30d)")
                }
                return span.seconds
            }
            switch name {
            case "read-only":
                guard value == nil else { throw .invalid("read-only takes no value") }
                readOnly = true
            case "keep-if-slow":
                guard value == nil else { throw .invalid("keep-if-slow takes no value") }
                keepIfSlow = true
            case "connect-timeout": connectTimeout = try seconds()
            case "timeout":
                timeout = try seconds()
                timeoutGiven = true
            case "ttl": timeToLive = try seconds()
            case "bearer-env": bearerEnvironment = try required()
            case "bearer-file": bearerFile = try required()
            case "user-env": userEnvironment = try required()
            case "password-env":
                guard case .redis = kind else {
                    if case .redisSocket = kind { passwordEnvironment = try required(); continue }
                    throw .invalid("password-env is for Redis stores (HTTP stores take user-env or bearer-env, S3 its AWS_ variables)")
                }
                passwordEnvironment = try required()
            default:
                let known = ["read-only", "keep-if-slow", "connect-timeout", "timeout", "ttl", "bearer-env", "bearer-file", "user-env", "password-env"]
                throw .invalid("unknown attribute '\(name)' (known: \(known.joined(separator: ", ")))")
            }
        }
    }

    /// A path segment that means "this folder" or "the one above", written plainly or percent-encoded.
    /// A path's segments as a server that decodes `%2F` reads them (`a%2F..` is two, `..` the second).
    static func segments(_ path: Substring) -> [Substring] {
        let slashes = path.replacing("%2f", with: "/").replacing("%2F", with: "/")
        return slashes.split(separator: "/").map { Substring($0) }
    }

    private static func isDotSegment(_ segment: Substring) -> Bool {
        let decoded = segment.lowercased().replacing("%2e", with: ".")
        return decoded == "." || decoded == ".."
    }

    /// Remotes separated by spaces (IMGCACHE_REMOTE); "none" or nothing: none.
    public static func list(parsing text: String) throws(ValueError) -> [RemoteSpec] {
        let items = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).map(String.init)
        guard items != ["none"] else { return [] }
        var remotes: [RemoteSpec] = []
        for item in items {
            guard item != "none" else { throw .invalid("'none' cannot be given with other remotes") }
            remotes.append(try RemoteSpec(parsing: item))
        }
        return remotes
    }

    /// The URL and attributes, with any password in the URL hidden.
    public var description: String { RemoteSpec.redacted(text) }

    /// `text` with the user information of its URL, if any, shown as `***`.
    public static func redacted(_ text: String) -> String {
        guard let scheme = text.firstRange(of: "://") else { return text }
        let rest = text[scheme.upperBound...]
        let authority = rest.prefix { $0 != "/" && $0 != "|" && $0 != "?" && $0 != "&" }
        // Each URL in the text: an S3 store's endpoint= is one too.
        guard let at = authority.lastIndex(of: "@") else {
            return String(text[..<scheme.upperBound]) + String(authority) + redacted(String(rest[authority.endIndex...]))
        }
        return String(text[..<scheme.upperBound]) + "***" + redacted(String(text[at...]))
    }

    /// Whether the URL itself carries a password (which is then never remembered).
    public var hasCredentialsInURL: Bool { description != text }

    /// Whether using it sends something of the user's: a token, a file, a variable, a password, or
    /// (an S3 store) a signature with the AWS_ variables.
    public var sendsCredentials: Bool {
        if bearerEnvironment != nil || bearerFile != nil || userEnvironment != nil || passwordEnvironment != nil || hasCredentialsInURL {
            return true
        }
        if case .s3 = kind { return true }
        return false
    }

    /// Names the remote in the down markers and messages: the URL without attributes or credentials.
    public var identity: String { String(description.split(separator: "|").first ?? "") }

    private static func kind(of url: String) throws(ValueError) -> Kind {
        // Messages name the URL without its password.
        let shown = redacted(url)
        guard let colon = url.firstIndex(of: ":") else { throw .invalid("'\(shown)' is no URL (expected http://, https://, redis://, redis+unix: or s3://)") }
        let scheme = url[..<colon].lowercased()
        let rest = url[url.index(after: colon)...]
        switch scheme {
        case "http", "https":
            guard (try? RemoteURL(parsing: url)) != nil else { throw .invalid("'\(shown)' is not a valid \(scheme) URL") }
            // Objects go under the URL's path: a query or fragment would put them all at one resource.
            guard !url.contains("?"), !url.contains("#") else {
                throw .invalid("'\(shown)' has a query or fragment: a store is a base URL, its objects go under its path")
            }
            var base = url
            while base.hasSuffix("/") { base.removeLast() }
            // "." and ".." would be resolved on the way (by libcurl, or the server): objects would land outside the path named.
            let path = base.dropFirst(scheme.count + 3).drop { $0 != "/" }
            if RemoteSpec.segments(path).contains(where: RemoteSpec.isDotSegment) {
                throw .invalid("'\(shown)' has a '.' or '..' in its path: name the store's folder itself")
            }
            return .http(base: base)
        case "redis":
            guard rest.hasPrefix("//") else { throw .invalid("expected redis://host[:port][/db]") }
            let afterSlashes = rest.dropFirst(2)
            let authority = afterSlashes.prefix { $0 != "/" }
            var hostPort = Substring(authority), user: String?, password: String?
            if let at = authority.lastIndex(of: "@") {
                let credentials = authority[..<at]
                hostPort = authority[authority.index(after: at)...]
                if let separator = credentials.firstIndex(of: ":") {
                    user = credentials[..<separator].isEmpty ? nil : String(credentials[..<separator])
                    password = String(credentials[credentials.index(after: separator)...])
                } else {
                    password = String(credentials)
                }
            }
            var host = String(hostPort), port = 6379
            if let separator = hostPort.lastIndex(of: ":") {
                host = String(hostPort[..<separator])
                guard let number = Int(hostPort[hostPort.index(after: separator)...]), (1...65_535).contains(number) else {
                    throw .invalid("bad port in '\(shown)'")
                }
                port = number
            }
            guard !host.isEmpty else { throw .invalid("'\(shown)' has no host") }
            let path = afterSlashes.dropFirst(authority.count).drop { $0 == "/" }
            guard path.isEmpty || Int(path) != nil else { throw .invalid("bad database number '\(path)' in '\(shown)'") }
            return .redis(host: host, port: port, database: Int(path) ?? 0, user: user, password: password)
        case "redis+unix":
            let parts = rest.split(separator: "?", maxSplits: 1)
            guard let path = parts.first, path.hasPrefix("/") else { throw .invalid("expected redis+unix:/path/to/socket") }
            var database = 0
            if parts.count == 2 {
                guard parts[1].hasPrefix("db="), let number = Int(parts[1].dropFirst(3)) else {
                    throw .invalid("bad query in '\(shown)' (expected ?db=N)")
                }
                database = number
            }
            return .redisSocket(path: String(path), database: database)
        case "rediss":
            throw .invalid("rediss:// (Redis over TLS) is not supported: the hiredis of this system (0.14) has no TLS; "
                + "use redis:// on a trusted network, or an https:// store")
        case "s3":
            guard rest.hasPrefix("//") else { throw .invalid("expected s3://bucket/prefix?endpoint=URL&region=REGION") }
            // A fragment would put every object at one key (the part before it).
            guard !url.contains("#") else { throw .invalid("'\(shown)' has a '#': a bucket's prefix is a path, without a fragment") }
            let parts = rest.dropFirst(2).split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
            let path = parts[0]
            let bucket = path.prefix { $0 != "/" }
            // S3's rules: 3 to 63 lowercase letters, digits, '-' and '.', starting and ending with a letter or digit
            // (so never "." or "..", which a path would resolve away).
            guard (3...63).contains(bucket.count),
                  bucket.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-" || $0 == ".") }),
                  let first = bucket.first, let last = bucket.last, first.isLetter || first.isNumber, last.isLetter || last.isNumber,
                  !bucket.contains("..") else {
                throw .invalid("bad bucket name in '\(shown)' (3 to 63 lowercase letters, digits, '-' and '.', starting and ending with a letter or digit)")
            }
            var prefix = String(path.dropFirst(bucket.count))
            while prefix.hasPrefix("/") { prefix.removeFirst() }
            while prefix.hasSuffix("/") { prefix.removeLast() }
            // Resolved on the way, ".." would reach another bucket.
            if RemoteSpec.segments(prefix[...]).contains(where: RemoteSpec.isDotSegment) {
                throw .invalid("'\(shown)' has a '.' or '..' in its prefix: name the prefix itself")
            }
            var endpoint = "https://s3.amazonaws.com", region = "us-east-1"
            if parts.count == 2 {
                for pair in parts[1].split(separator: "&") {
                    let field = pair.split(separator: "=", maxSplits: 1).map(String.init)
                    guard field.count == 2 else { throw .invalid("bad query '\(pair)' in '\(shown)'") }
                    switch field[0] {
                    case "endpoint": endpoint = field[1]
                    case "region": region = field[1]
                    default: throw .invalid("unknown s3 parameter '\(field[0])' (known: endpoint, region)")
                    }
                }
            }
            while endpoint.hasSuffix("/") { endpoint.removeLast() }
            // Credentials come from AWS_ variables and sign the request; in the endpoint they would only be printed.
            if redacted(endpoint) != endpoint {
                throw .invalid("the endpoint of '\(redacted(url))' holds a user or password: S3 credentials come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
            }
            guard (try? RemoteURL(parsing: endpoint)) != nil else { throw .invalid("bad endpoint '\(endpoint)'") }
            return .s3(bucket: String(bucket), prefix: prefix, endpoint: endpoint, region: region)
        default:
            throw .invalid("unsupported remote '\(scheme):' (expected http://, https://, redis://, redis+unix: or s3://)")
        }
    }
}
