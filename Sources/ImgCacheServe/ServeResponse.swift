import ImgCacheCore

/// An answer for the HTTP side to send: a status, headers and a body (a refusal is thrown as one).
public struct ServeResponse: Error, Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: Body

    /// What follows the headers.
    public enum Body: Sendable {
        case empty
        case bytes([UInt8])
        /// A variant's bytes from the memory tier, shared with every other answer sending them.
        case shared(SharedBytes)
        /// An open file, sent from its start with sendfile; the sender closes it.
        case file(descriptor: Int32, length: Int)
        /// No body (HEAD), its length said.
        case length(Int)
    }

    public init(status: Int, headers: [(String, String)], body: Body) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// An error: the status and a one-line text body.
    public static func error(_ status: Int, _ message: String) -> ServeResponse {
        ServeResponse(status: status, headers: [("Content-Type", "text/plain; charset=utf-8"), ("Cache-Control", "no-store")],
                      body: .bytes(Array((message + "\n").utf8)))
    }

    /// A failed fetch in one line, the source URL's secrets left out.
    static func message(_ error: FetchError) -> String {
        // Where a name resolves inside the network is not told to whoever asked.
        if case .download(let url, .privateAddress) = error {
            return ControlCharacters.escaped(RemoteURL.redacted(url)) + ": source not allowed: it reaches a loopback, private, link-local, "
                + "multicast or unspecified address"
        }
        return ControlCharacters.escaped(RemoteURL.redacted(error.message))
    }

    /// The one line of an error's body, when it is one.
    public var errorLine: String? {
        guard status >= 400, case .bytes(let bytes) = body else { return nil }
        return String(decoding: bytes.prefix { $0 != 10 }, as: UTF8.self)
    }
}
