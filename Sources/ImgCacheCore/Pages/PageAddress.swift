#if canImport(Glibc)
import Glibc
#endif

/// Where a page finds a file: the file's path relative to the site's root
/// folder (`--site-root`), under a URL prefix (`--url-prefix`), or, with
/// neither, the path as it is; always written as a URL path.
public struct PageAddress: Equatable, Sendable {
    /// The folder the page's paths are relative to.
    public var siteRoot: String? { didSet { resolve() } }
    /// What every path starts with (`/img/`, `https://cdn.example/`); the rest is relative to `siteRoot`, else to `base`.
    public var urlPrefix: String? { didSet { resolve() } }
    /// The folder copies are written to (`--output-dir`): what a prefix is followed by the path from, without a site root.
    public var base: String? { didSet { resolve() } }
    /// The folder paths are relative to, as absolute components: found once, not for every file.
    private var from: [String]?

    public init(siteRoot: String? = nil, urlPrefix: String? = nil, base: String? = nil) {
        self.siteRoot = siteRoot
        self.urlPrefix = urlPrefix
        self.base = base
        resolve()
    }

    private mutating func resolve() {
        from = (siteRoot ?? (urlPrefix != nil ? base : nil)).map { PageAddress.components(PageAddress.absolute($0)) }
    }

    /// The address of the file at `path`.
    public func address(of path: String) -> String {
        let relative = from.map { PageAddress.relativePath(of: PageAddress.components(PageAddress.absolute(path)), from: $0) } ?? path
        guard let urlPrefix else { return HTMLText.urlPath(relative) }
        // A space or comma would end a srcset candidate: percent-encoded in the prefix too.
        var prefix = ""
        for scalar in urlPrefix.unicodeScalars {
            if scalar.value <= 0x20 || scalar.value == 0x7F || scalar == "," {
                let hex = Array("0123456789ABCDEF")
                prefix += "%" + String(hex[Int(scalar.value >> 4)]) + String(hex[Int(scalar.value & 15)])
            } else {
                prefix.unicodeScalars.append(scalar)
            }
        }
        let joined = prefix.hasSuffix("/") || prefix.isEmpty ? prefix : prefix + "/"
        // A path climbing out of the folder the prefix stands for is written as it is, after the prefix.
        return joined + HTMLText.urlPath(relative.hasPrefix("./") ? String(relative.dropFirst(2)) : relative)
    }

    /// `path` relative to the folder `folder`, both taken from the working folder when relative,
    /// `.` and `..` resolved by their names (`../img/a.png` from a folder beside it).
    public static func relativePath(of path: String, from folder: String) -> String {
        relativePath(of: components(absolute(path)), from: components(absolute(folder)))
    }

    private static func relativePath(of target: [String], from start: [String]) -> String {
        var common = 0
        while common < min(target.count, start.count), target[common] == start[common] { common += 1 }
        let parts = Array(repeating: "..", count: start.count - common) + target[common...]
        return parts.isEmpty ? "." : parts.joined(separator: "/")
    }

    private static func absolute(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return "/" + path }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) + "/" + path
    }

    private static func components(_ path: String) -> [String] {
        var parts: [String] = []
        for part in path.split(separator: "/") where part != "." {
            if part == ".." { _ = parts.popLast() } else { parts.append(String(part)) }
        }
        return parts
    }
}
