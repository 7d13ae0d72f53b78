import CImgCacheShims

/// The C libraries imgcache loads when it needs them, as `--version` reports
/// them: each loaded, its version and file, or why it cannot be.
public enum SystemLibraries {
    /// One library as found on this system.
    public struct Report: Sendable {
        public let name: String
        /// What imgcache uses it for.
        public let purpose: String
        /// Its version; nil when it cannot be loaded.
        public let version: String?
        /// The file it was loaded from.
        public let path: String?
        /// Why it cannot be loaded.
        public let problem: String?
    }

    static let described: [(code: Int32, name: String, purpose: String)] = [
        (Int32(IC_LIBRARY_CURL), "libcurl", "downloads, HTTP and S3 remote stores"),
        (Int32(IC_LIBRARY_CRYPTO), "libcrypto", "SHA-256 of remote objects"),
        (Int32(IC_LIBRARY_PNG), "libpng", "PNG and APNG"),
        (Int32(IC_LIBRARY_JPEG), "libjpeg", "JPEG"),
        (Int32(IC_LIBRARY_WEBP), "libwebp", "WebP, animated WebP"),
        (Int32(IC_LIBRARY_GIF), "giflib", "GIF"),
        (Int32(IC_LIBRARY_HIREDIS), "hiredis", "Redis remote stores"),
        (Int32(IC_LIBRARY_AVIF), "libavif", "AVIF, AVIF sequences, writing AVIF"),
        (Int32(IC_LIBRARY_HEIF), "libheif", "HEIC, HEIF, AVIF that libavif refuses"),
        (Int32(IC_LIBRARY_JXL), "libjxl", "JPEG XL, writing JPEG XL"),
        (Int32(IC_LIBRARY_TIFF), "libtiff", "TIFF"),
        (Int32(IC_LIBRARY_RSVG), "librsvg", "SVG"),
        (Int32(IC_LIBRARY_LCMS), "lcms2", "ICC profiles: colours turned into sRGB"),
    ]

    /// Loads and describes every library (this loads them all: a few milliseconds).
    public static func all() -> [Report] {
        described.map(report)
    }

    /// Whether the library `name` (as `described` names it) loads here; loads it when it does.
    public static func loads(_ name: String) -> Bool {
        described.first { $0.name == name }.map(report)?.version != nil
    }

    /// `library` loaded (or not) and described.
    private static func report(_ library: (code: Int32, name: String, purpose: String)) -> Report {
        var version = [CChar](repeating: 0, count: 256), path = [CChar](repeating: 0, count: 1024)
        let loaded = ic_library_describe(library.code, &version, version.count, &path, path.count) == 0
        let versionText = String(cString: version), pathText = String(cString: path)
        return Report(name: library.name, purpose: library.purpose, version: loaded ? versionText : nil,
                      path: loaded && !pathText.isEmpty ? pathText : nil, problem: loaded ? nil : versionText)
    }

    /// What this build can do with the libraries found: `https`, `http2`,
    /// the formats, `redis`, `s3`.
    public static func features(_ reports: [Report]) -> [String] {
        func has(_ name: String) -> Bool { reports.contains { $0.name == name && $0.version != nil } }
        var features: [String] = []
        if let curl = reports.first(where: { $0.name == "libcurl" })?.version {
            features.append("http")
            if !curl.contains("no TLS") { features.append("https") }
            if curl.contains("HTTP/2") { features.append("http2") }
            features += ["webdav", "s3"]
        }
        if has("libpng") { features.append("png") }
        if has("libjpeg") { features.append("jpeg") }
        if has("giflib") { features.append("gif") }
        if has("libwebp") { features.append("webp") }
        if has("libavif") || has("libheif") { features.append("avif") }
        if has("libheif") { features.append("heic") }
        if has("libjxl") { features.append("jxl") }
        if has("libtiff") { features.append("tiff") }
        if has("librsvg") { features.append("svg") }
        features += ["bmp", "ico"]
        if has("lcms2") { features.append("icc") }
        if has("libpng"), has("libjpeg"), has("libwebp") { features.append("thumbnails") }
        if has("hiredis"), has("libcrypto") { features.append("redis") }
        if !has("libcrypto") { features.removeAll { $0 == "webdav" || $0 == "s3" } }
        return features
    }
}
