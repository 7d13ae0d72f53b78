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
    /// Seconds one image's decode may take (`config --max-decode-time`).
    public var decodeSeconds: Double?
    /// Bytes one image's decode may take (`config --max-decode-memory`).
    public var decodeMemory: Int?

    public init(maxSize: SizeLimit? = nil, maxAge: AgeLimit? = nil, failedTTL: AgeLimit? = nil) {
        self.maxSize = maxSize
        self.maxAge = maxAge
        self.failedTTL = failedTTL
    }

    /// The names of the settings, as the file and `config --unset` spell them.
    public static let keys = ["max-size", "max-age", "failed-ttl", "remote", "umask", "max-decode-time", "max-decode-memory"]

    /// Forgets the setting `key` (one of `keys`).
    public mutating func unset(_ key: String) {
        switch key {
        case "max-size": maxSize = nil
        case "max-age": maxAge = nil
        case "failed-ttl": failedTTL = nil
        case "remote": remotes = nil
        case "umask": umask = nil
        case "max-decode-time": decodeSeconds = nil
        case "max-decode-memory": decodeMemory = nil
        default: break
        }
    }

    /// The settings file's name inside the namespace folder.
    public static let fileName = "settings"
    static let signature = "imgcache-settings 1"

    /// The settings of the namespace in `directory`, as far as they can be
    /// used; empty when none were saved. What cannot be used is dropped:
    /// `inspect` says what that was.
    /// Whether the settings file in the namespace `directory` can be written by this user alone
    /// (or does not exist): owned by them, and not writable by its group or others.
    public static func writableByUserAlone(in directory: String) -> Bool {
        switch SystemCall.lstat(directory + "/" + fileName) {
        case .success(let info): return info.st_uid == geteuid() && info.st_mode & 0o022 == 0 && info.st_mode & S_IFMT == S_IFREG
        case .failure(let error): return error == .noSuchFile
        }
    }

    public static func load(from directory: String) -> NamespaceSettings {
        inspect(directory).settings
    }

    /// The settings file as read, and what in it cannot be used.
    public struct Inspection: Sendable {
        /// What can be used (empty when the file is missing or unusable as a whole).
        public var settings = NamespaceSettings()
        /// Why some or all of it cannot be used: the file unreadable, not a
        /// settings file, written by a later version, or a line with a value
        /// the command line would refuse. Empty when all is well.
        public var problems: [String] = []
        /// The file's path.
        public let path: String
    }

    /// Reads the settings of the namespace in `directory`, keeping every problem.
    public static func inspect(_ directory: String) -> Inspection {
        let path = directory + "/" + fileName
        do {
            guard let bytes = try FileSystem.readFile(path, limit: 64 * 1024) else { return Inspection(path: path) }
            return parse(bytes, path: path)
        } catch {
            var inspection = Inspection(path: path)
            inspection.problems.append("cannot be read: \(error.reason)")
            return inspection
        }
    }

    /// The settings in a file's `bytes`, and what in them cannot be used.
    static func parse(_ bytes: [UInt8], path: String) -> Inspection {
        var inspection = Inspection(path: path)
        guard let text = String(validating: bytes, as: UTF8.self) else {
            inspection.problems.append("is not text")
            return inspection
        }
        // Lines as an editor may leave them: a final carriage return (CRLF) is no part of a line.
        let lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
        guard let first = lines.first, first.hasPrefix("imgcache-settings ") else {
            inspection.problems.append("is not an imgcache settings file (its first line is not '\(signature)')")
            return inspection
        }
        guard first == Substring(signature) else {
            let version = first.dropFirst("imgcache-settings ".count)
            let shown = ControlCharacters.escaped(String(first.prefix(40)))
            if let number = Int(version), number > 1, version.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
                inspection.problems.append("was written by a later version of imgcache ('\(shown)')")
            } else {
                inspection.problems.append("has a version line this imgcache does not understand ('\(shown)'; it writes '\(signature)')")
            }
            return inspection
        }
        var settings = NamespaceSettings()
        var seen: [String: Int] = [:]
        for (offset, line) in lines.enumerated().dropFirst() where !line.isEmpty {
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            guard parts.count == 2 else {
                inspection.problems.append("line \(offset + 1): not 'NAME VALUE' but '\(ControlCharacters.escaped(String(line.prefix(40))))\(line.utf8.count > 40 ? "…" : "")'")
                continue
            }
            guard NamespaceSettings.keys.contains(parts[0]) else {
                // A misspelt limit must not pass for an absent one: clean would apply the default.
                let name = ControlCharacters.escaped(String(parts[0].prefix(40)))
                inspection.problems.append("line \(offset + 1): unknown setting '\(name)' (known: \(NamespaceSettings.keys.joined(separator: ", ")))")
                continue
            }
            if parts[0] != "remote", let earlier = seen[parts[0]] {
                inspection.problems.append("line \(offset + 1): \(parts[0]) is set again (first on line \(earlier)); which one is meant is unknown")
                continue
            }
            seen[parts[0]] = offset + 1
            do throws(ValueError) {
                switch parts[0] {
                case "max-size": settings.maxSize = try SizeLimit(stored: parts[1])
                case "max-age": settings.maxAge = try AgeLimit(stored: parts[1])
                case "failed-ttl": settings.failedTTL = try AgeLimit(stored: parts[1])
                case "remote": settings.remotes = (settings.remotes ?? []) + (parts[1] == "none" ? [] : [parts[1]])
                case "umask": settings.umask = try CacheUmask.parse(parts[1])
                case "max-decode-time": settings.decodeSeconds = try DecodeLimits.seconds(parsing: parts[1])
                case "max-decode-memory": settings.decodeMemory = try DecodeLimits.memory(parsing: parts[1])
                default: continue
                }
            } catch {
                let value = ControlCharacters.escaped(String(parts[1].prefix(40)))
                inspection.problems.append("line \(offset + 1): \(parts[0]) '\(value)': \(error.reason)")
            }
        }
        inspection.settings = settings
        return inspection
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
        if let decodeSeconds { lines.append("max-decode-time \(decodeSeconds)s") }
        if let decodeMemory { lines.append("max-decode-memory \(decodeMemory)") }
        return lines.joined(separator: "\n") + "\n"
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
            settingsSaved(settings)
            return settings
        }
    }
}
