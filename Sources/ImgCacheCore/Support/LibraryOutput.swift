#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Keeps what a C library prints off imgcache's stderr while imgcache calls
/// it itself: libjxl writes a line for each field of a header it refuses,
/// whatever `-q` says. (Decoders print in their workers, where it is captured
/// and shown with `-v`.) Descriptor 2 is pointed at /dev/null around such a
/// call, under a lock that imgcache's own writes to stderr take too, so that
/// none of its messages is lost meanwhile.
public enum LibraryOutput {
    private static let gate = Mutex<Int32>(-1)

    /// `body`, with stderr silenced.
    static func silenced<T: Sendable>(_ body: () -> T) -> T {
        gate.withLock { null in
            if null < 0 { null = open("/dev/null", O_WRONLY | O_CLOEXEC) }
            let saved = null >= 0 ? dup(2) : -1
            if saved >= 0 { dup2(null, 2) }
            defer {
                if saved >= 0 {
                    dup2(saved, 2)
                    close(saved)
                }
            }
            return body()
        }
    }

    /// `write`, which writes to stderr, never while a library's output is silenced.
    public static func whileWritingStandardError<T: Sendable, E: Error>(_ write: () throws(E) -> T) throws(E) -> T {
        let result: Result<T, E> = gate.withLock { _ in
            do throws(E) { return .success(try write()) } catch { return .failure(error) }
        }
        return try result.get()
    }
}
