import Foundation

/// A fresh directory under /tmp, removed (even if made read-only) when released.
final class TemporaryDirectory {
    let url: URL
    var path: String { url.path }

    init(_ label: String = "imgcache-test") throws {
        let template = FileManager.default.temporaryDirectory.appendingPathComponent("\(label).XXXXXX").path
        var bytes = Array(template.utf8CString)
        guard mkdtemp(&bytes) != nil else { throw CocoaError(.fileWriteUnknown) }
        url = URL(fileURLWithPath: String(cString: bytes))
    }

    func appending(_ component: String) -> String { url.appendingPathComponent(component).path }

    /// Writes `lines` (a list of URLs, say) as the file `name`, one per line; its path.
    func write(lines: [String], to name: String = "urls.txt") throws -> String {
        let path = appending(name)
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: false, encoding: .utf8)
        return path
    }

    deinit {
        // Restore write permission that a test may have removed, then delete.
        if let walker = FileManager.default.enumerator(atPath: path) {
            for case let relative as String in walker {
                chmod(url.appendingPathComponent(relative).path, 0o700)
            }
        }
        chmod(path, 0o700)
        try? FileManager.default.removeItem(at: url)
    }
}
