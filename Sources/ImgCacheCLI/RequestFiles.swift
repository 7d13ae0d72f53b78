#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCore

/// The files a run's requests read or write besides the cache: the trusted
/// certificate authorities (`--cacert`, `--capath` or, as curl does,
/// `CURL_CA_BUNDLE`, `SSL_CERT_FILE` and `SSL_CERT_DIR`), the netrc file and
/// the cookie jar. Each is checked before the first download (a hit reads none
/// of them), so that one that cannot be read or written is an error naming it,
/// not a silent miss.
enum RequestFiles {
    /// `downloads` with the certificate authorities the environment names
    /// when the command line names none, as curl reads them: `CURL_CA_BUNDLE`,
    /// else `SSL_CERT_DIR` and `SSL_CERT_FILE`.
    static func resolved(_ downloads: DownloadConfiguration, environment: Environment) -> DownloadConfiguration {
        var resolved = downloads
        // libcurl saves a jar by writing a new file and renaming it into place: a
        // jar reached through a link is given as its target, so the link stays.
        if let jar = downloads.cookieJar, let target = linkTarget(jar) { resolved.cookieJar = target }
        guard downloads.certificateAuthorities == DownloadConfiguration.CertificateAuthorities() else { return resolved }
        func variable(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        if let bundle = variable("CURL_CA_BUNDLE") {
            resolved.certificateAuthorities.bundle = bundle
        } else {
            resolved.certificateAuthorities.folder = variable("SSL_CERT_DIR")
            resolved.certificateAuthorities.bundle = variable("SSL_CERT_FILE")
        }
        return resolved
    }

    /// Why one of the files cannot be used, and the status to exit with; nil when all can.
    static func problem(_ downloads: DownloadConfiguration, environment: Environment) -> (message: String, status: ExitStatus)? {
        let given = downloads.certificateAuthorities
        let fromCommandLine = given == DownloadConfiguration.CertificateAuthorities() ? nil : given
        let authorities = resolved(downloads, environment: environment).certificateAuthorities
        if let bundle = authorities.bundle, let reason = unreadable(bundle, folder: false) ?? notPEM(bundle) {
            let source = fromCommandLine?.bundle != nil ? "--cacert" : environment["CURL_CA_BUNDLE"]?.isEmpty == false ? "CURL_CA_BUNDLE" : "SSL_CERT_FILE"
            return ("cannot read the certificate authorities \(ControlCharacters.escaped(bundle)) (\(source)): \(reason)", .noInput)
        }
        if let folder = authorities.folder, let reason = unreadable(folder, folder: true) {
            let source = fromCommandLine?.folder != nil ? "--capath" : "SSL_CERT_DIR"
            return ("cannot read the certificate authorities folder \(ControlCharacters.escaped(folder)) (\(source)): \(reason)", .noInput)
        }
        if case .file(let path)? = downloads.netrc, let reason = unreadable(path, folder: false) {
            return ("cannot read the netrc file \(ControlCharacters.escaped(path)) (--netrc-file): \(reason)", .noInput)
        }
        if let jar = downloads.cookieJar {
            if let reason = unreadable(jar, folder: false, mayBeMissing: true) {
                return ("cannot read the cookie jar \(ControlCharacters.escaped(jar)) (--cookies): \(reason)", .noInput)
            }
            if let reason = unwritable(jar) {
                return ("cannot write the cookie jar \(ControlCharacters.escaped(jar)) (--cookies): \(reason)", .outputFailed)
            }
        }
        return nil
    }

    /// Why `path` cannot be read as a file (or a folder), if it cannot.
    private static func unreadable(_ path: String, folder: Bool, mayBeMissing: Bool = false) -> String? {
        let info: FileStatus
        switch FileSystem.statusFollowingLinks(path) {
        case .success(let found): info = found
        case .failure(.noSuchFile) where mayBeMissing: return nil
        case .failure(let errno): return errno.description
        }
        if info.isDirectory != folder { return folder ? "not a folder" : "it is a folder" }
        // A FIFO would keep libcurl waiting in open() where no signal reaches it; a device is no such file.
        if !folder, !info.isRegularFile { return "not a regular file (a FIFO, a device or a socket)" }
        return FileSystem.accessDenial(path, R_OK | (folder ? X_OK : 0))?.description
    }

    /// Why a file (the cookie jar, a --stats report) cannot be written at `path` when the run
    /// ends, if it cannot: a folder there, or no write permission on it or on its folder.
    /// Whether `path` and `other` are one file (the same device and inode; both there). "-" is
    /// standard input, whatever file it was opened from (`< list.csv`).
    static func isSameFile(_ path: String, _ other: String) -> Bool {
        var first = stat(), second = stat()
        func status(_ name: String, _ into: inout stat) -> Bool { name == "-" ? fstat(0, &into) == 0 : stat(name, &into) == 0 }
        guard status(path, &first), status(other, &second) else { return false }
        // Two pipes or terminals are not files a report could overwrite.
        guard first.st_mode & S_IFMT == S_IFREG else { return false }
        return first.st_dev == second.st_dev && first.st_ino == second.st_ino
    }

    static func unwritable(_ path: String) -> String? {
        if FileSystem.accessDenial(path, F_OK) == nil {
            if (try? FileSystem.status(path))??.isDirectory == true { return "it is a folder" }
            return FileSystem.accessDenial(path, W_OK)?.description
        }
        let folder = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
        return FileSystem.accessDenial(folder.isEmpty ? "/" : folder, W_OK | X_OK).map { "its folder: " + $0.description }
    }

    /// The file a symbolic link at `path` leads to, when it is one whose folder exists.
    private static func linkTarget(_ path: String) -> String? {
        guard (try? FileSystem.status(path))??.isSymbolicLink == true else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        // The link's target may not exist yet (a first run): its folder must.
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        let target = String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return target.hasPrefix("/") ? target : FileSystem.parentDirectory(of: path) + "/" + target
    }

    /// Why a certificate file is not one: no PEM certificate in its first megabyte.
    /// Read through a link, as libcurl reads it (`unreadable` found a regular file there).
    private static func notPEM(_ path: String) -> String? {
        let marker = Array("-----BEGIN ".utf8)
        func hasMarker(_ bytes: [UInt8]) -> Bool {
            guard bytes.count >= marker.count else { return false }
            for start in 0...(bytes.count - marker.count) where bytes[start] == marker[0] {
                if bytes[start..<start + marker.count].elementsEqual(marker) { return true }
            }
            return false
        }
        let bytes: [UInt8]
        do {
            guard let read = try FileSystem.readFile(path, limit: 1 << 20, allowingSpecialFiles: true) else { return Errno.noSuchFile.description }
            bytes = read
        } catch { return error.errno.description }
        guard bytes.count >= marker.count else { return "no PEM certificate in it" }
        return hasMarker(bytes) ? nil : "no PEM certificate in it (-----BEGIN CERTIFICATE-----)"
    }
}
