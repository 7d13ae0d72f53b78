#if canImport(Glibc)
import Glibc
#endif

/// What a namespace remembers for later `clean` runs (`clean --remember`), so a
/// cron line needs no flags: kept in `<namespace>/settings` as text.
public struct NamespaceSettings: Equatable, Sendable {
    public var maxSize: SizeLimit?
    public var maxAge: AgeLimit?
    /// How long failed URLs are remembered (fetch and prefetch read it too).
    public var failedTTL: AgeLimit?
    /// The remote stores fetch and prefetch use (`--remote ... --remember`);
    /// empty: none, remembered so; nil: nothing remembered.
    public var remotes: [String]?
    /// The permission mask for what imgcache creates in the cache (`config --umask`).
    public var umask: mode_t?

    public init(maxSize: SizeLimit? = nil, maxAge: AgeLimit? = nil, failedTTL: AgeLimit? = nil) {
        self.maxSize = maxSize
        self.maxAge = maxAge
        self.failedTTL = failedTTL
    }

    /// The settings file's name inside the namespace folder.
    public static let fileName = "settings"
    static let signature = "imgcache-settings 1"

    /// The settings of the namespace in `directory`; empty when none were saved
    /// or the file is not one imgcache wrote.
    public static func load(from directory: String) -> NamespaceSettings {
        guard let bytes = try? FileSystem.readFile(directory + "/" + fileName, limit: 64 * 1024),
              let settings = NamespaceSettings(parsing: String(decoding: bytes, as: UTF8.self)) else { return NamespaceSettings() }
        return settings
    }

    /// Writes the settings atomically (temporary file and rename).
    public func save(to directory: String) throws(SystemError) {
        try TemporaryFile.replace(NamespaceSettings.fileName, in: directory, with: serialized())
    }

    func serialized() -> String {
        var lines = [NamespaceSettings.signature]
        if let maxSize { lines.append("max-size " + maxSize.stored) }
        if let maxAge { lines.append("max-age " + maxAge.stored) }
        if let failedTTL { lines.append("failed-ttl " + failedTTL.stored) }
        if let remotes { lines += remotes.isEmpty ? ["remote none"] : remotes.map { "remote " + $0 } }
        if let umask { lines.append("umask " + CacheUmask.text(umask)) }
        return lines.joined(separator: "\n") + "\n"
    }

    init?(parsing text: String) {
        let lines = text.split(separator: "\n")
        guard lines.first == Substring(NamespaceSettings.signature) else { return nil }
        for line in lines.dropFirst() {
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { continue }
            switch parts[0] {
            case "max-size": maxSize = parts[1] == "none" ? .unlimited : Int64(parts[1]).map(SizeLimit.bytes)
            case "max-age": maxAge = parts[1] == "never" ? .never : Double(parts[1]).map(AgeLimit.seconds)
            case "failed-ttl": failedTTL = parts[1] == "never" ? .never : Double(parts[1]).map(AgeLimit.seconds)
            case "remote": remotes = (remotes ?? []) + (parts[1] == "none" ? [] : [parts[1]])
            case "umask": umask = try? CacheUmask.parse(parts[1])
            default: continue  // written by a later version: ignored, not fatal
            }
        }
    }
}

extension NamespaceSettings {
    /// Takes the limits given (nil: keep the remembered one), as `clean --remember` and `config` do.
    public mutating func remember(maxSize: SizeLimit?, maxAge: AgeLimit?, failedTTL: AgeLimit?) {
        if let maxSize { self.maxSize = maxSize }
        if let maxAge { self.maxAge = maxAge }
        if let failedTTL { self.failedTTL = failedTTL }
    }
}

extension DiskCache {
    /// Changes the namespace's remembered settings and returns them: read,
    /// changed and saved under the namespace lock, so two runs remembering
    /// different things at once both keep theirs.
    @discardableResult
    public func updateSettings(_ change: (inout NamespaceSettings) -> Void) throws(SystemError) -> NamespaceSettings {
        try prepareForStores()
        return try lock.withShard(NamespaceLock.settingsByte, .exclusive) { () throws(SystemError) -> NamespaceSettings in
            var settings = NamespaceSettings.load(from: directory)
            change(&settings)
            try settings.save(to: directory)
            return settings
        }
    }
}
