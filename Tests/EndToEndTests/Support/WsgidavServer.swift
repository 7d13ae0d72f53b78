import Foundation

/// A WebDAV server that follows RFC 4918 as most do (wsgidav, from PyPI,
/// which `make test` installs), on a free 127.0.0.1 port, serving a temporary
/// folder to anyone: unlike nginx, a PUT into a collection that does not
/// exist is answered 409.
final class WsgidavServer {
    let port: Int
    let root: TemporaryDirectory
    private var process: Process?

    /// The store's URL for `path` (no trailing slash).
    func url(_ path: String = "") -> String { "http://127.0.0.1:\(port)" + (path.isEmpty ? "" : "/" + path) }

    init() throws {
        root = try TemporaryDirectory("imgcache-wsgidav")
        let folder = root.path
        guard let started = try ServerProcess.start({ port in
            ["python3", "-m", "wsgidav.server.server_cli", "--host", "127.0.0.1", "--port", String(port),
             "--root", folder, "--auth", "anonymous", "--no-config", "-q"]
        }) else { throw NginxServer.ServerError.didNotStart("wsgidav did not start") }
        (process, port) = (started.process, started.port)
    }

    /// The files stored under the root, as paths relative to it.
    func files() -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: root.path)
        var found: [String] = []
        while let path = enumerator?.nextObject() as? String {
            var directory: ObjCBool = false
            if FileManager.default.fileExists(atPath: root.path + "/" + path, isDirectory: &directory), !directory.boolValue {
                found.append(path)
            }
        }
        return found.sorted()
    }

    deinit {
        if let process, process.isRunning {
            Foundation.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}
