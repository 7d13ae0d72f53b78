#if canImport(Glibc)
import Glibc
#endif
import CImgCacheShims
import Synchronization

/// Every decode worker this process has running, so that a signal ends them
/// all at once (`stopAll`, from the signal watcher's thread) whatever a
/// library in them is doing; a worker started after that is ended at once.
public final class WorkerRegistry: Sendable {
    /// The process's one registry.
    public static let shared = WorkerRegistry()

    private struct State {
        var running: Set<Int32> = []
        var stopping = false
        var started = 0
        var peakBytes = 0
    }
    private let state = Mutex(State())

    /// Takes `pid` in; false when the process is stopping (the caller ends it).
    func register(_ pid: Int32) -> Bool {
        state.withLock { state in
            guard !state.stopping else { return false }
            state.running.insert(pid)
            state.started += 1
            return true
        }
    }

    func unregister(_ pid: Int32) {
        _ = state.withLock { $0.running.remove(pid) }
    }

    /// Whether the process is stopping: jobs end as interrupted, no worker starts.
    var isStopping: Bool { state.withLock { $0.stopping } }

    /// How many workers this process has started (the tests' and `-v`'s count).
    public var startedCount: Int { state.withLock { $0.started } }

    /// The largest resident memory a worker of this process reached, in bytes.
    public var workersPeakMemory: Int { state.withLock { $0.peakBytes } }

    /// Notes a worker's resident memory at its peak so far.
    func notePeak(_ bytes: Int) {
        state.withLock { $0.peakBytes = max($0.peakBytes, bytes) }
    }

    /// This process's own largest resident memory so far, in bytes (decoding never counts here):
    /// its memory's high-water mark, `VmHWM`. (`getrusage`'s maximum is no use: Linux carries the
    /// spawning process's over an exec, so a process started from a large one would report that.)
    public static var ownPeakMemory: Int {
        guard let bytes = try? FileSystem.readFile("/proc/self/status", limit: 1 << 16, allowingSpecialFiles: true) else { return 0 }
        let text = String(decoding: bytes, as: UTF8.self)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }) else { return 0 }
        let digits = line.dropFirst("VmHWM:".count).filter(\.isNumber)
        return (Int(digits) ?? 0) * 1024
    }

    /// The least address space imgcache runs in: its threads, libcurl and the buffers of a few
    /// transfers. Under a smaller `ulimit -v` an allocation anywhere could fail, and Swift ends a
    /// process whose allocation fails.
    public static let smallestAddressSpace = 128 << 20

    /// This process's address-space limit (`ulimit -v`) when it is below `smallestAddressSpace`, else nil.
    public static var addressSpaceTooSmall: Int? {
        let limit = ic_own_limit(ic_limit_names(0), 0)
        return limit < UInt64(smallestAddressSpace) ? Int(limit) : nil
    }

    /// Under an address-space limit, has malloc reserve less of it (two arenas, not one a thread).
    public static func fitAddressSpace() {
        _ = ic_fit_address_space()
    }

    /// Kills every worker (SIGKILL) and lets no new one start.
    public func stopAll() {
        let running = state.withLock { state in
            state.stopping = true
            return state.running
        }
        for pid in running { kill(pid, SIGKILL) }
    }
}
