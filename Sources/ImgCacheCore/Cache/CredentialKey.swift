#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The secret that credentials are digested with before anything of them is
/// written to the cache: a URL's user information in its key (so that the
/// entries of `alice:…@host` and `bob:…@host` stay apart, and an entry's name
/// cannot be checked against a guessed password), and `-u`, netrc, headers
/// and cookies in the failed list's request fingerprints. 32 random bytes in
/// `<namespace>/secret-<uid>`, mode 0600, one per user (a team cache's members
/// keep their credentialed entries apart), made (with the namespace) on first
/// need: only a run with credentials reads it. Where it cannot be made (a
/// cache this user cannot write), the run keeps a secret of its own, so what it
/// keys answers no later run.
public final class CredentialKey: Sendable, Equatable {
    private let cache: DiskCache
    private let loaded = Mutex<[UInt8]?>(nil)

    public init(cache: DiskCache) {
        self.cache = cache
    }

    private var namespaceDirectory: String { cache.directory }

    public static func == (a: CredentialKey, b: CredentialKey) -> Bool { a.namespaceDirectory == b.namespaceDirectory }

    /// `url`'s key form: its normal form, its user information (if any) replaced by `~` and its
    /// digest under the secret.
    public func keyed(_ url: String) -> String {
        let normal = URLText.normalized(url)
        guard let information = URLText.userInfo(of: url) else { return normal }
        return URLText.withUserInfo(normal, "~" + digest(information))
    }

    /// The file's name for this user.
    static var fileName: String { "secret-\(getuid())" }

    /// What went wrong with the secret's file, said once (nil: nothing).
    private let problem = Mutex<String?>(nil)

    /// What went wrong with the secret's file, once: the first call after it happened says it.
    public func takeProblem() -> String? {
        problem.withLock { problem in
            defer { problem = nil }
            return problem
        }
    }

    /// The secret's bytes, read or made on first call. A file that is not this user's secret
    /// (another user's, a link, a FIFO, the wrong size or mode: planted, or damaged) is replaced
    /// and said: left, it would make every credentialed URL miss, run after run.
    var bytes: [UInt8] {
        loaded.withLock { loaded in
            if let loaded { return loaded }
            let path = namespaceDirectory + "/" + CredentialKey.fileName
            let found = CredentialKey.read(path)
            if case .success(let secret) = found {
                loaded = secret
                return secret
            }
            var replaced = true
            if case .failure(.unusable(let reason)) = found {
                replaced = (try? FileSystem.remove(path)) != nil
                problem.withLock { $0 = replaced ? "\(path) was not a secret of this user's (\(reason)): replaced with a new one"
                                                 : "\(path) is not a secret of this user's (\(reason)) and cannot be replaced" }
            }
            let made = replaced ? CredentialKey.made(in: namespaceDirectory, cache: cache) : nil
            if made == nil, replaced, case .failure(.unusable) = CredentialKey.read(path) {
                problem.withLock { $0 = "\(path) is not a secret of this user's and came back when replaced" }
            }
            if made == nil {
                problem.withLock { $0 = ($0.map { $0 + "; " } ?? "") + "URLs with a password are cached under a key of this run's own" }
            }
            let secret = made ?? CredentialKey.random()
            loaded = secret
            return secret
        }
    }

    /// `text` digested under the secret, as hex.
    func digest(_ text: String) -> String {
        MD5.hexString(MD5.authenticationCode(Array(text.utf8), key: bytes))
    }

    /// Why no secret was read.
    enum Unread: Error {
        /// There is none.
        case missing
        /// There is a file, not one this user's secret can be: why.
        case unusable(String)
    }

    /// The secret in `path`: only this user's own regular file of 32 bytes, readable by nobody else.
    private static func read(_ path: String) -> Result<[UInt8], Unread> {
        let descriptor: Int32
        switch SystemCall.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK) {
        case .success(let opened): descriptor = opened
        case .failure(.noSuchFile): return .failure(.missing)
        case .failure(.tooManySymbolicLinks): return .failure(.unusable("a symbolic link"))
        case .failure(let error): return .failure(.unusable(error.description))
        }
        defer { SystemCall.close(descriptor) }
        guard case .success(let status) = SystemCall.fstat(descriptor) else { return .failure(.unusable("its status does not read")) }
        guard status.st_mode & S_IFMT == S_IFREG else { return .failure(.unusable("not a regular file")) }
        guard status.st_uid == getuid() else { return .failure(.unusable("owned by user \(status.st_uid)")) }
        guard status.st_mode & 0o077 == 0 else { return .failure(.unusable("mode \(String(status.st_mode & 0o777, radix: 8)), not 600")) }
        guard let bytes = try? FileSystem.readPrefix(descriptor: descriptor, path: path, count: 64), bytes.count == 32 else {
            return .failure(.unusable("not 32 bytes"))
        }
        return .success(bytes)
    }

    /// A new secret saved in the namespace `directory` (made first, as a store makes it); nil when
    /// it cannot be saved there.
    private static func made(in directory: String, cache: DiskCache) -> [UInt8]? {
        guard (try? cache.prepareForStores()) != nil else { return nil }
        let secret = random()
        let path = directory + "/" + fileName
        // Made 0600 from the start (the umask can only take bits away): nobody else ever opens it.
        let temporary = directory + "/tmp.secret.\(getpid()).\(MD5.hexString(random()).prefix(12))"
        guard case .success(let descriptor) = SystemCall.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600) else {
            return nil
        }
        defer { SystemCall.close(descriptor) }
        guard (try? FileSystem.writeAll(descriptor, secret, path: temporary)) != nil else {
            try? FileSystem.remove(temporary)
            return nil
        }
        // Another run of this user may have made one meanwhile: the first one stays.
        guard link(temporary, path) == 0 || errno == EEXIST else {
            try? FileSystem.remove(temporary)
            return nil
        }
        try? FileSystem.remove(temporary)
        return try? read(path).get()
    }

    private static func random() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }
}
