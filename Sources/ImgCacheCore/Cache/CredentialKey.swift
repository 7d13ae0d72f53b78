#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The secret that credentials are digested with before anything of them is
/// written to the cache (the failed list's request fingerprints): 32 random
/// bytes in `<namespace>/secret-<uid>`, mode 0600, one per user, made on first
/// need. A password in a URL or `-u` then leaves nothing in the cache that a
/// guess can be checked against offline, by anyone who can list a team cache.
/// Read only for a run that carries credentials; where the file cannot be made
/// (a cache this user cannot write), the run keeps a secret of its own, so its
/// failures simply answer no later run.
final class CredentialKey: Sendable {
    private let namespaceDirectory: String
    private let loaded = Mutex<[UInt8]?>(nil)

    init(namespaceDirectory: String) {
        self.namespaceDirectory = namespaceDirectory
    }

    /// The file's name for this user.
    static var fileName: String { "secret-\(getuid())" }

    /// The secret's bytes, read or made on first call.
    var bytes: [UInt8] {
        loaded.withLock { loaded in
            if let loaded { return loaded }
            let secret = CredentialKey.read(namespaceDirectory + "/" + CredentialKey.fileName) ?? CredentialKey.made(in: namespaceDirectory)
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

    /// A new secret saved in `directory` (made if missing); nil when it cannot be saved.
    private static func made(in directory: String) -> [UInt8]? {
        guard (try? FileSystem.makeDirectories(directory, mode: 0o777)) != nil else { return nil }
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
