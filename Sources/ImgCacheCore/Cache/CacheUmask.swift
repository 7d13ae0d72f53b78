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
    /// The mask chosen for the cache (IMGCACHE_UMASK or the namespace's), or `noMaskChosen`.
    private static let chosen = Atomic<UInt32>(noMaskChosen)
    private static let noMaskChosen: UInt32 = 0xFFFF

    /// The mask the cache was given on purpose for this run (IMGCACHE_UMASK or
    /// `config --umask`); nil when it follows the user's umask.
    public static var chosenMask: mode_t? {
        let value = chosen.load(ordering: .relaxed)
        return value == noMaskChosen ? nil : mode_t(value)
    }

    /// Sets the process's umask for the cache: `IMGCACHE_UMASK` in
    /// `environment`, else the namespace's `remembered` one; none: left as it is.
    /// A remembered mask is in a file every member of a team cache may write, and
    /// editing it in place keeps its owner, so no file can say who wrote it: one that
    /// lets every user write is never taken from it (`IMGCACHE_UMASK` may ask for
    /// one, for a run), and one granting more than the user's own umask is said.
    /// Returns what to warn of.
    @discardableResult
    public static func apply(environment: Environment, remembered: mode_t?) throws(ValueError) -> [String] {
        // umask() both reads and sets: read it, then put it back (or the new one).
        let current = umask(0o022)
        saved.store(UInt32(current), ordering: .relaxed)
        var mask = current
        if let text = environment["IMGCACHE_UMASK"], !text.isEmpty {
            do { mask = try parse(text) } catch {
                umask(current)
                throw error
            }
        } else if let remembered {
            var warnings: [String] = []
            if let problem = unrememberable(remembered) {
                umask(current)
                return ["ignoring its remembered umask \(text(remembered)): \(problem) (the user's umask \(text(current)) applies)"]
            }
            if ~remembered & current & 0o777 != 0 {
                warnings.append("its remembered umask \(text(remembered)) grants more than yours (\(text(current))): "
                                + "what imgcache makes there is \(describe(granted: ~remembered & current))")
            }
            chosen.store(UInt32(remembered), ordering: .relaxed)
            umask(remembered)
            return warnings
        } else {
            umask(mask)
            return []
        }
        chosen.store(UInt32(mask), ordering: .relaxed)
        umask(mask)
        return []
    }

    /// Why `mask` may not be remembered for a namespace, nil when it may: one that lets every
    /// user write would let anyone replace cached images, asked for by whoever can edit the file.
    public static func unrememberable(_ mask: mode_t) -> String? {
        mask & 0o002 == 0 ? "it lets every user replace cached images; IMGCACHE_UMASK=\(text(mask)) asks for it for one run" : nil
    }

    /// "group-writable", "readable and writable by others": what the bits of `granted` let others do.
    private static func describe(granted: mode_t) -> String {
        var parts: [String] = []
        if granted & 0o020 != 0 { parts.append("group-writable") }
        if granted & 0o002 != 0 { parts.append("writable by every user") }
        if granted & 0o040 != 0, granted & 0o020 == 0 { parts.append("group-readable") }
        if granted & 0o004 != 0, granted & 0o002 == 0 { parts.append("readable by every user") }
        return parts.isEmpty ? "more open than your files" : parts.joined(separator: " and ")
    }

    /// An octal mask, `002` or `0027`: at most 0777.
    public static func parse(_ text: String) throws(ValueError) -> mode_t {
        guard !text.isEmpty, text.count <= 4, text.allSatisfy({ ("0"..."7").contains($0) }),
              let value = mode_t(text, radix: 8), value <= 0o777 else {
            throw ValueError("expected an octal mask such as 002, 022 or 077")
        }
        guard value & 0o700 == 0 else {
            throw ValueError("\(text) would keep the owner from using the cache; a mask such as 002, 022 or 077 keeps the owner's bits")
        }
        return value
    }

    /// The mask as it is written: three octal digits.
    public static func text(_ mask: mode_t) -> String {
        let digits = String(mask, radix: 8)
        return String(repeating: "0", count: max(0, 3 - digits.count)) + digits
    }

    /// Gives the namespace in `directory` the permissions `mask` allows, for
    /// what is shared by every writer: the namespace and shard folders (setgid
    /// kept), the failed list's folder, the lock, settings and statistics
    /// files and each shard's URL log. Images keep their modes (replacing or
    /// removing one needs only its folder). Best effort: a file of another
    /// user is left as it is. `config --umask` calls it, so that a namespace
    /// made before the mask was set is shared from then on.
    public static func share(namespaceDirectory directory: String, mask: mode_t) {
        func adjust(_ path: String, folder: Bool) {
            guard case .success(let info) = SystemCall.lstat(path), info.st_uid == geteuid() else { return }
            let type = info.st_mode & S_IFMT
            guard folder ? type == S_IFDIR : type == S_IFREG else { return }
            let mode = (folder ? 0o777 : 0o666) & ~mask | (info.st_mode & S_ISGID)
            _ = SystemCall.chmod(path, mode)
        }
        adjust(directory, folder: true)
        for name in [NamespaceLock.fileName, NamespaceSettings.fileName, StatisticsLog.fileName] {
            adjust(directory + "/" + name, folder: false)
        }
        adjust(directory + "/failed", folder: true)
        for shard in 0..<256 {
            let path = directory + "/" + URLLog.shardName(shard)
            adjust(path, folder: true)
            adjust(path + "/" + URLLog.fileName, folder: false)
        }
    }
}
