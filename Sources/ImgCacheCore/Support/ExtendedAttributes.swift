#if canImport(Glibc)
import Glibc
#endif
import CImgCacheShims

extension FileSystem {
    /// The value of extended attribute `name` of `path` (never following a link).
    /// Nil when the file has no such attribute; throws ENOENT when the file is
    /// missing and ENOTSUP where the file system keeps no user attributes.
    package static func attribute(_ name: String, of path: String, limit: Int = 64 * 1024) throws(SystemError) -> [UInt8]? {
        // An entry's attribute is tens of bytes: read on the stack first, then copied to its size
        // (a hit reads one; a zeroed kilobyte each time cost more than the call).
        let small = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 256) { buffer -> Result<[UInt8], Errno> in
            SystemCall.getAttribute(path, name, buffer.baseAddress, buffer.count).map { Array(buffer[..<$0]) }
        }
        switch small {
        case .success(let bytes): return bytes
        case .failure(Errno(ENODATA)): return nil
        case .failure(Errno(ERANGE)): break
        case .failure(let errno): throw SystemError("read the metadata of", path: path, errno: errno)
        }
        var capacity = 1024
        while true {
            var bytes = [UInt8](repeating: 0, count: capacity)
            switch bytes.withUnsafeMutableBytes({ SystemCall.getAttribute(path, name, $0.baseAddress, capacity) }) {
            case .success(let count):
                bytes.removeSubrange(count...)
                return bytes
            case .failure(Errno(ENODATA)): return nil
            case .failure(Errno(ERANGE)) where capacity < limit: capacity = min(limit, capacity * 8)
            case .failure(let errno): throw SystemError("read the metadata of", path: path, errno: errno)
            }
        }
    }

    /// Sets (creates or replaces) extended attribute `name` of `path`. One call:
    /// a reader sees the old value or the new one.
    package static func setAttribute(_ name: String, of path: String, to value: [UInt8]) throws(SystemError) {
        try value.withUnsafeBytes { SystemCall.setAttribute(path, name, $0.baseAddress, $0.count) }
            .get("write the metadata of", path: path)
    }

    /// Whether the file system holding `path` keeps user extended attributes.
    static func supportsAttributes(_ path: String) -> Bool {
        ic_supports_attributes(path) == 1
    }
}
