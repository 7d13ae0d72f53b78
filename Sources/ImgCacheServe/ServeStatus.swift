import ImgCacheCore

/// The HTTP status a failed fetch answers with, as a CDN in front reads it: the origin's 404
/// and 410 passed on, 413 for an image over the limits, 415 for what is not an image, 403 for
/// a source the server may not reach, 504 for an origin that timed out, 502 for the rest of the
/// origin's failures, 500 for the server's own.
public enum ServeStatus {
    public static func of(_ error: FetchError) -> Int {
        switch error {
        case .invalidURL, .unsupportedScheme, .badRow: return 400
        case .download(_, let download):
            switch download {
            case .httpStatus(let code) where code == 404 || code == 410: return code
            case .httpStatus: return 502
            case .privateAddress: return 403
            case .timeout, .connectTimeout, .maximumTimeExceeded: return 504
            case .tooLarge, .refused(.tooManyPixels), .refused(.inflatesTooMuch): return 413
            case .refused(.notAnImage), .refused(.unsupported): return 415
            case .invalidURL, .unsupportedScheme, .redirectedToScheme: return 400
            case .localWrite, .libraryMissing, .systemLimit, .cancelled: return 500
            default: return 502
            }
        case .notAnImage, .unsupportedFormat: return 415
        case .variantsNotMade(_, .tooManyPixels, _): return 413
        case .decodeStopped: return 413
        case .corruptImage, .notUsable, .variantsNotMade: return 415
        case .tooManyPixels: return 413
        case .blacklisted(_, let reason, _, _, _):
            // The failed list keeps the cause in words: its status is read back from them.
            if reason.hasPrefix("HTTP 404") { return 404 }
            if reason.hasPrefix("HTTP 410") { return 410 }
            if reason.hasPrefix("not an image") || reason.contains("not supported") { return 415 }
            if reason.contains("over") && reason.contains("limit") { return 413 }
            return 502
        case .deadlineReached: return 504
        case .pinMismatch, .notCached, .interrupted, .cacheUnwritable, .cacheFull, .libraryMissing,
             .downloaderUnavailable, .requestFileUnusable, .revalidationRaced:
            return 500
        }
    }

    /// The reason phrase of `status`.
    public static func phrase(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 304: return "Not Modified"
        case 400: return "Bad Request"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 410: return "Gone"
        case 413: return "Content Too Large"
        case 415: return "Unsupported Media Type"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        default: return "Status \(status)"
        }
    }
}
