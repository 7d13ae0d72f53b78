#if canImport(Glibc)
import Glibc
#endif

/// A cached original held open from the moment its variants are queued until
/// they are made: a `clear` or `clean` in another process that unlinks the
/// file meanwhile takes its name, not its bytes, so the variants are still
/// made from them instead of the image being looked up and downloaded again.
///
/// `@unchecked Sendable` is safe: the descriptor is set once in `init`, only
/// read afterwards, and closed once, in `deinit`, when no thread holds it.
package final class HeldOriginal: @unchecked Sendable {
    package let descriptor: Int32

    /// The file at `path`, open for reading; nil when it is already gone (or cannot be opened).
    package init?(path: String) {
        guard case .success(let opened) = SystemCall.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK) else { return nil }
        descriptor = opened
    }

    deinit { SystemCall.close(descriptor) }
}
