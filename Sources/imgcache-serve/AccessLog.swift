#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCore
import Synchronization

/// One line per request: the combined log format nginx and Apache write, or with `--json` an
/// object per line. Written with one write(2) per line, so lines of several event loops never
/// mix; SIGHUP reopens the file (after logrotate moved it).
final class AccessLog: Sendable {
    /// One request as logged.
    struct Line {
        var remote: String
        var method: String
        var target: String
        var version: String
        var status: Int
        var bytes: Int
        var referer: String?
        var userAgent: String?
        var seconds: Double
        var tier: String?
        var error: String?
    }

    private let path: String?
    private let json: Bool
    private let descriptor: Mutex<Int32>

    /// Why the log cannot be opened.
    struct Problem: Error {
        let description: String
    }

    /// `path` nil: nowhere; "-": standard output.
    init(path: String?, json: Bool) throws(Problem) {
        self.path = path
        self.json = json
        if let path {
            descriptor = Mutex(try AccessLog.open(path))
        } else {
            descriptor = Mutex(-1)
        }
    }

    private static func open(_ path: String) throws(Problem) -> Int32 {
        if path == "-" { return 1 }
        let descriptor = Glibc.open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o640)
        guard descriptor >= 0 else { throw Problem(description: "cannot open the access log \(path): \(String(cString: strerror(errno)))") }
        return descriptor
    }

    /// Opens the file again by its name, in place of the one open now; nil, or why not.
    func reopen() -> String? {
        guard let path, path != "-" else { return nil }
        do {
            let fresh = try AccessLog.open(path)
            descriptor.withLock { current in
                Glibc.close(current)
                current = fresh
            }
            return nil
        } catch {
            return error.description
        }
    }

    func write(_ line: Line) {
        guard path != nil else { return }
        let text = (json ? jsonLine(line) : combinedLine(line)) + "\n"
        let bytes = Array(text.utf8)
        descriptor.withLock { descriptor in
            var offset = 0
            while offset < bytes.count {
                let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
                if written < 0, errno == EINTR { continue }
                if written <= 0 { break }
                offset += written
            }
        }
    }

    /// Bytes a log line may not carry as they are: quotes, backslashes and control characters, escaped.
    static func escaped(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20 || scalar.value == 0x7f:
                out += "\\x" + String(scalar.value, radix: 16).leftPadded(to: 2)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    private func combinedLine(_ line: Line) -> String {
        let time = AccessLog.commonLogTime(WallClock.now())
        return "\(line.remote) - - [\(time)] \"\(AccessLog.escaped(line.method)) \(AccessLog.escaped(line.target)) \(line.version)\" "
            + "\(line.status) \(line.bytes) \"\(AccessLog.escaped(line.referer ?? "-"))\" \"\(AccessLog.escaped(line.userAgent ?? "-"))\" "
            + String(format3(line.seconds)) + (line.tier.map { " " + $0 } ?? " -")
    }

    private func jsonLine(_ line: Line) -> String {
        var object = JSONObject()
        object.add("time", Timestamp.iso8601(WallClock.now()))
        object.add("remote", line.remote)
        object.add("method", line.method)
        object.add("path", line.target)
        object.add("protocol", line.version)
        object.add("status", line.status)
        object.add("bytes", line.bytes)
        object.add("seconds", JSONValue.number((line.seconds * 1000).rounded() / 1000))
        if let tier = line.tier { object.add("tier", tier) }
        if let referer = line.referer { object.add("referer", referer) }
        if let userAgent = line.userAgent { object.add("user_agent", userAgent) }
        if let error = line.error { object.add("error", error) }
        return object.serialized
    }

    private func format3(_ seconds: Double) -> String {
        let millis = Int((seconds * 1000).rounded())
        return "\(millis / 1000).\(String(millis % 1000).leftPadded(to: 3))"
    }

    /// `02/Dec/2026:14:09:16 +0000`, as the common log format writes time (in UTC).
    static func commonLogTime(_ seconds: Double) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { String(value).leftPadded(to: 2) }
        return "\(two(parts.tm_mday))/\(months[Int(parts.tm_mon)])/\(parts.tm_year + 1900):\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) +0000"
    }
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
