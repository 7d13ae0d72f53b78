#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The permission mask of what imgcache creates in a cache, as ccache's
/// `umask` setting: by default the process's umask (so a team sharing a
/// cache under a setgid group folder sets `umask 002` and each member's
/// entries are the group's); `IMGCACHE_UMASK`, else the namespace's
/// remembered `umask` (`config --umask`), replaces it for the run. Files
/// written outside the cache (`-o`) keep the user's own umask.
public enum CacheUmask {
    /// The process's umask when the run began, for files outside the cache.
    public static var userMask: mode_t { mode_t(saved.load(ordering: .relaxed)) }
    private static let saved = Atomic<UInt32>(0o022)

    /// Sets the process's umask for the cache: `IMGCACHE_UMASK` in
    /// `environment`, else the namespace's remembered one; none: left as it is.
    public static func apply(environment: Environment, namespaceDirectory: String) throws(ValueError) {
        // umask() both reads and sets: read it, then put it back (or the new one).
        let current = umask(0o022)
        saved.store(UInt32(current), ordering: .relaxed)
        var mask = current
        if let text = environment["IMGCACHE_UMASK"], !text.isEmpty {
            do { mask = try parse(text) } catch {
                umask(current)
                throw error
            }
        } else if let remembered = NamespaceSettings.load(from: namespaceDirectory).umask {
            mask = remembered
        }
        umask(mask)
    }

    /// An octal mask, `002` or `0027`: at most 0777.
    public static func parse(_ text: String) throws(ValueError) -> mode_t {
        guard !text.isEmpty, text.count <= 4, text.allSatisfy({ ("0"..."7").contains($0) }),
              let value = mode_t(text, radix: 8), value <= 0o777 else {
            throw ValueError("expected an octal mask such as 002, 022 or 077")
        }
        return value
    }

    /// The mask as it is written: three octal digits.
    public static func text(_ mask: mode_t) -> String {
        let digits = String(mask, radix: 8)
        return String(repeating: "0", count: max(0, 3 - digits.count)) + digits
    }
}
