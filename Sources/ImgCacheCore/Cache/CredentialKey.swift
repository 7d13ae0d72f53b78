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

    /// The secret's bytes, read or made on first call.
    var bytes: [UInt8] {
        loaded.withLock { loaded in
            if let loaded { return loaded }
            let secret = CredentialKey.read(namespaceDirectory + "/" + CredentialKey.fileName) ?? CredentialKey.made(in: namespaceDirectory, cache: cache)
                ?? CredentialKey.random()
            loaded = secret
            return secret
        }
    }

    /// `text` digested under the secret, as hex.
    func digest(_ text: String) -> String {
        MD5.hexString(MD5.authenticationCode(Array(text.utf8), key: bytes))
    }

    /// The secret in `path`: only this user's own regular file, readable by nobody else.
    private static func read(_ path: String) -> [UInt8]? {
        guard case .success(let descriptor) = SystemCall.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK) else { return nil }
        defer { SystemCall.close(descriptor) }
        guard case .success(let status) = SystemCall.fstat(descriptor), status.st_mode & S_IFMT == S_IFREG,
              status.st_uid == getuid(), status.st_mode & 0o077 == 0,
              let bytes = try? FileSystem.readPrefix(descriptor: descriptor, path: path, count: 64), bytes.count == 32 else { return nil }
        return bytes
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
        return read(path)
    }

    private static func random() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }
}
