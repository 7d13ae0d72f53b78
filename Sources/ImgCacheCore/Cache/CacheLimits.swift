/// A bound on a namespace's total size (`--max-size`): `none` or a byte count.
public enum SizeLimit: Equatable, Sendable, CustomStringConvertible {
    case unlimited
    case bytes(Int64)

    /// Reads `none`, `500M`, `2G`, `1.5GiB` or plain bytes; zero is refused
    /// (it would mean "remove everything", which is `clear`).
    public init(parsing text: String) throws(ValueError) {
        if text == "none" { self = .unlimited; return }
        let size: ByteSize
        do { size = try ByteSize(parsing: text) } catch {
            throw .invalid(error.reason + ", or 'none'")
        }
        guard size.bytes > 0 else { throw .invalid("must be more than 0 (use 'none' for no limit, or 'imgcache clear')") }
        self = .bytes(size.bytes)
    }

    /// Reads what `stored` wrote: `none`, or a positive byte count.
    public init(stored text: String) throws(ValueError) {
        if text == "none" { self = .unlimited; return }
        // Only the digits `stored` writes: no sign, exponent or hexadecimal the command line would refuse.
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let bytes = Int64(text) else {
            throw .invalid("expected a byte count (digits only) or 'none'")
        }
        guard bytes > 0 else { throw .invalid("must be more than 0") }
        guard Double(bytes) < 9.0e18 else { throw .invalid("too large") }
        self = .bytes(bytes)
    }

    /// How settings files and JSON write it: bytes, or `none`.
    public var stored: String {
        switch self {
        case .unlimited: return "none"
        case .bytes(let bytes): return String(bytes)
        }
    }

    public var description: String {
        switch self {
        case .unlimited: return "none"
        case .bytes(let bytes): return ByteSize.humanised(bytes)
        }
    }
}

/// A bound on how long an unused entry is kept (`--max-age`): `never` or a duration.
public enum AgeLimit: Equatable, Sendable, CustomStringConvertible {
    case never
    case seconds(Double)

    /// Reads `never`, `45s`, `30m`, `12h`, `7d`, `2w` or plain seconds (more than 0).
    public init(parsing text: String) throws(ValueError) {
        if text == "never" { self = .never; return }
        let span: TimeSpan
        do { span = try TimeSpan(parsing: text) } catch {
            throw .invalid(error.reason + ", or 'never'")
        }
        guard span.seconds > 0 else { throw .invalid("must be more than 0 (use 'never' for no limit)") }
        self = .seconds(span.seconds)
    }

    public var stored: String {
        switch self {
        case .never: return "never"
        case .seconds(let seconds): return String(seconds)
        }
    }

    /// Reads what `stored` wrote: `never`, or seconds, more than 0 and at most 100 years.
    public init(stored text: String) throws(ValueError) {
        if text == "never" { self = .never; return }
        // Only the decimal form `stored` writes ("2592000", "2592000.0"): no sign, exponent or hexadecimal.
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), parts.allSatisfy({ !$0.isEmpty && $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }),
              let seconds = Double(text), seconds.isFinite else {
            throw .invalid("expected seconds (digits, with an optional fraction) or 'never'")
        }
        guard seconds > 0 else { throw .invalid("must be more than 0") }
        guard seconds <= TimeSpan.maximum else { throw .invalid("too long: at most 100 years") }
        self = .seconds(seconds)
    }

    public var description: String {
        switch self {
        case .never: return "never"
        case .seconds(let seconds): return TimeSpan(seconds: seconds).description
        }
    }

    /// Whether something last used at `time` is past this limit at `now`.
    public func isExpired(_ time: Double, now: Double) -> Bool {
        switch self {
        case .never: return false
        case .seconds(let limit): return now - time >= limit
        }
    }
}


/// The limits `clean` applies to a namespace, and where each came from.
public struct CacheLimits: Equatable, Sendable {
    public var maxSize: SizeLimit
    public var maxAge: AgeLimit
    public var maxSizeSource: Source
    public var maxAgeSource: Source
    /// How long a failed URL is remembered (fetch fails fast until then; clean removes it after).
    public var failedTTL: AgeLimit = FailedURLStore.defaultTTL
    public var failedTTLSource: Source = .default

    /// Where a limit's value came from.
    public enum Source: String, Equatable, Sendable {
        case commandLine = "command line"
        case remembered
        case `default`
    }

    public init(maxSize: SizeLimit, maxAge: AgeLimit, maxSizeSource: Source, maxAgeSource: Source) {
        self.maxSize = maxSize
        self.maxAge = maxAge
        self.maxSizeSource = maxSizeSource
        self.maxAgeSource = maxAgeSource
    }

    /// SDWebImage's defaults: no size limit, entries unused for a week expire.
    public static let defaultMaxSize = SizeLimit.unlimited
    public static let defaultMaxAge = AgeLimit.seconds(7 * 86_400)

    /// Each limit from the command line, else the namespace's remembered one, else the default.
    public static func resolve(maxSize: SizeLimit?, maxAge: AgeLimit?, failedTTL: AgeLimit? = nil,
                               remembered: NamespaceSettings) -> CacheLimits {
        func pick<T>(_ given: T?, _ stored: T?, _ fallback: T) -> (T, Source) {
            if let given { return (given, .commandLine) }
            if let stored { return (stored, .remembered) }
            return (fallback, .default)
        }
        let size = pick(maxSize, remembered.maxSize, defaultMaxSize)
        let age = pick(maxAge, remembered.maxAge, defaultMaxAge)
        let ttl = pick(failedTTL, remembered.failedTTL, FailedURLStore.defaultTTL)
        var limits = CacheLimits(maxSize: size.0, maxAge: age.0, maxSizeSource: size.1, maxAgeSource: age.1)
        (limits.failedTTL, limits.failedTTLSource) = ttl
        return limits
    }
}
