#if canImport(Glibc)
import Glibc
#endif
import CImgCacheShims
import Synchronization

/// The calls that open, examine, list, read, write, rename, remove, lock and
/// set metadata on the cache's files, in one place. Each keeps the C
/// convention (a result of -1 and `errno` set) so callers read like the
/// manual page, but goes through `SystemCallFaults` first: a test can make any
/// of them fail with ENOSPC, EACCES, EIO or EINTR for the files under one
/// folder, without a broken disk. When no fault is armed the cost is one
/// atomic load per call.
package enum SystemCall {
    static func open(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 {
        if SystemCallFaults.isArmed, SystemCallFaults.inject(.open, path: path) { return -1 }
        let descriptor = Glibc.open(path, flags, mode)
        if descriptor >= 0, SystemCallFaults.isArmed { SystemCallFaults.opened(descriptor, path: path) }
        return descriptor
    }

    static func openat(_ directory: Int32, _ name: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 {
        if SystemCallFaults.isArmed, SystemCallFaults.inject(.open, descriptor: directory, name: name) { return -1 }
        let descriptor = Glibc.openat(directory, name, flags, mode)
        if descriptor >= 0, SystemCallFaults.isArmed {
            SystemCallFaults.opened(descriptor, path: SystemCallFaults.path(of: directory, name: name))
        }
        return descriptor
    }

    @discardableResult
    static func close(_ descriptor: Int32) -> Int32 {
        if SystemCallFaults.isArmed { SystemCallFaults.closed(descriptor) }
        return Glibc.close(descriptor)
    }

    static func mkdir(_ path: String, _ mode: mode_t) -> Int32 {
        faulting(.makeDirectory, path: path) { Glibc.mkdir(path, mode) }
    }

    static func access(_ path: String, _ mode: Int32) -> Int32 {
        faulting(.access, path: path) { Glibc.access(path, mode) }
    }

    static func lstat(_ path: String, _ info: inout stat) -> Int32 {
        faulting(.status, path: path) { Glibc.lstat(path, &info) }
    }

    static func fstat(_ descriptor: Int32, _ info: inout stat) -> Int32 {
        faulting(.status, descriptor: descriptor) { Glibc.fstat(descriptor, &info) }
    }

    static func fstatat(_ directory: Int32, _ name: String, _ info: inout stat, _ flags: Int32) -> Int32 {
        faulting(.status, descriptor: directory, name: name) { Glibc.fstatat(directory, name, &info, flags) }
    }

    static func read(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
        faulting(.read, descriptor: descriptor) { Glibc.read(descriptor, buffer, count) }
    }

    static func pread(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int, _ offset: off_t) -> Int {
        faulting(.read, descriptor: descriptor) { Glibc.pread(descriptor, buffer, count, offset) }
    }

    static func write(_ descriptor: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
        faulting(.write, descriptor: descriptor) { Glibc.write(descriptor, buffer, count) }
    }

    /// A second descriptor of an open folder, for `fdopendir` (which takes over
    /// the one it is given); the fault of a folder that cannot be listed.
    static func dup(_ descriptor: Int32) -> Int32 {
        faulting(.list, descriptor: descriptor) { Glibc.dup(descriptor) }
    }

    static func lseek(_ descriptor: Int32, _ offset: off_t, _ whence: Int32) -> off_t {
        Glibc.lseek(descriptor, offset, whence)
    }

    static func chmod(_ path: String, _ mode: mode_t) -> Int32 {
        faulting(.setTime, path: path) { Glibc.chmod(path, mode) }
    }

    static func fchmod(_ descriptor: Int32, _ mode: mode_t) -> Int32 {
        faulting(.write, descriptor: descriptor) { Glibc.fchmod(descriptor, mode) }
    }

    static func ftruncate(_ descriptor: Int32, _ length: off_t) -> Int32 {
        faulting(.write, descriptor: descriptor) { Glibc.ftruncate(descriptor, length) }
    }

    static func rename(_ source: String, _ destination: String) -> Int32 {
        faulting(.rename, path: destination) { Glibc.rename(source, destination) }
    }

    static func unlink(_ path: String) -> Int32 {
        faulting(.remove, path: path) { Glibc.unlink(path) }
    }

    static func unlinkat(_ directory: Int32, _ name: String, _ flags: Int32) -> Int32 {
        faulting(.remove, descriptor: directory, name: name) { Glibc.unlinkat(directory, name, flags) }
    }

    static func utimensat(_ path: String, _ times: UnsafePointer<timespec>, _ flags: Int32) -> Int32 {
        faulting(.setTime, path: path) { Glibc.utimensat(AT_FDCWD, path, times, flags) }
    }

    static func getAttribute(_ path: String, _ name: String, _ value: UnsafeMutableRawPointer?, _ size: Int) -> Int {
        faulting(.attribute, path: path) { ic_get_attribute(path, name, value, size) }
    }

    static func setAttribute(_ path: String, _ name: String, _ value: UnsafeRawPointer?, _ size: Int) -> Int32 {
        faulting(.attribute, path: path) { ic_set_attribute(path, name, value, size) }
    }

    /// Takes byte `index` of an open file, shared or exclusive, waiting for it
    /// when `wait`; a wait a signal interrupts is taken up again.
    static func lockByte(_ descriptor: Int32, _ index: Int, exclusive: Bool, wait: Bool) -> Int32 {
        while true {
            let result = faulting(.lock, descriptor: descriptor) { ic_lock_byte(descriptor, index, exclusive ? 1 : 0, wait ? 1 : 0) }
            if result == -1 && wait && Errno.current == .interrupted { continue }
            return result
        }
    }

    static func unlockByte(_ descriptor: Int32, _ index: Int) {
        _ = ic_unlock_byte(descriptor, index)
    }

    /// `call`, unless an armed fault fails it first for `path` (-1, errno set).
    private static func faulting<Result: BinaryInteger>(_ kind: SystemCallFaults.Call, path: String,
                                                          _ call: () -> Result) -> Result {
        if SystemCallFaults.isArmed, SystemCallFaults.inject(kind, path: path) { return -1 }
        return call()
    }

    /// `call`, unless an armed fault fails it first for the file open as
    /// `descriptor` (or `name` in that folder).
    private static func faulting<Result: BinaryInteger>(_ kind: SystemCallFaults.Call, descriptor: Int32, name: String? = nil,
                                                          _ call: () -> Result) -> Result {
        if SystemCallFaults.isArmed, SystemCallFaults.inject(kind, descriptor: descriptor, name: name) { return -1 }
        return call()
    }
}

/// Failures a test arms for `SystemCall`: each names the calls it hits, the
/// folder whose files it hits (so tests running at once in other folders are
/// untouched), the `errno` to give and how many times.
package enum SystemCallFaults {
    /// The kinds of call a fault can hit.
    package enum Call: Sendable, CaseIterable {
        case open, makeDirectory, access, status, list, read, write, rename, remove, setTime, attribute, lock
    }

    /// One armed failure.
    package struct Fault: Sendable {
        let calls: Set<Call>
        let folder: String
        let errno: Errno
        /// Failures left to give; nil gives them until disarmed.
        var remaining: Int?
    }

    /// A handle on an armed fault, to see how often it hit and to disarm it.
    package struct Token: Sendable, Hashable { let id: Int }

    private struct State {
        var faults: [Int: Fault] = [:]
        var hits: [Int: Int] = [:]
        var nextID = 0
        /// Descriptors opened while faults were armed, so calls on them can be
        /// matched by folder.
        var paths: [Int32: String] = [:]
    }

    private static let state = Mutex(State())
    private static let armedCount = Atomic<Int>(0)

    static var isArmed: Bool { armedCount.load(ordering: .relaxed) > 0 }

    /// Makes `calls` on files under `folder` fail with `errno`, `times` times
    /// (or until disarmed when nil). EINTR needs a count: an interrupted call
    /// is taken up again, and would be for ever.
    package static func arm(_ calls: Set<Call>, under folder: String, errno: Errno, times: Int? = nil) -> Token {
        precondition(errno != .interrupted || times != nil, "EINTR without a count would never end")
        let prefix = folder.hasSuffix("/") ? folder : folder + "/"
        return state.withLock { state in
            state.nextID += 1
            state.faults[state.nextID] = Fault(calls: calls, folder: prefix, errno: errno, remaining: times)
            state.hits[state.nextID] = 0
            armedCount.add(1, ordering: .relaxed)
            return Token(id: state.nextID)
        }
    }

    /// Stops the fault; returns how many calls it failed.
    @discardableResult
    package static func disarm(_ token: Token) -> Int {
        state.withLock { state in
            if state.faults.removeValue(forKey: token.id) != nil { armedCount.subtract(1, ordering: .relaxed) }
            if state.faults.isEmpty { state.paths.removeAll() }
            return state.hits.removeValue(forKey: token.id) ?? 0
        }
    }

    /// How many calls the fault has failed so far.
    package static func hits(_ token: Token) -> Int {
        state.withLock { $0.hits[token.id] ?? 0 }
    }

    static func inject(_ call: Call, path: String) -> Bool {
        state.withLock { state in
            for (id, fault) in state.faults where fault.calls.contains(call) && path.hasPrefix(fault.folder) {
                if let remaining = fault.remaining {
                    if remaining <= 0 { continue }
                    state.faults[id]?.remaining = remaining - 1
                }
                state.hits[id, default: 0] += 1
                Errno.current = fault.errno
                return true
            }
            return false
        }
    }

    static func inject(_ call: Call, descriptor: Int32, name: String? = nil) -> Bool {
        guard let path = state.withLock({ $0.paths[descriptor] }) else { return false }
        return inject(call, path: name.map { path + "/" + $0 } ?? path)
    }

    static func opened(_ descriptor: Int32, path: String) {
        // Checked again under the lock: a fault disarmed meanwhile must leave no mapping behind.
        state.withLock { state in if !state.faults.isEmpty { state.paths[descriptor] = path } }
    }

    static func closed(_ descriptor: Int32) {
        _ = state.withLock { $0.paths.removeValue(forKey: descriptor) }
    }

    /// The path of `name` inside the folder open as `directory`, as far as known.
    static func path(of directory: Int32, name: String) -> String {
        (state.withLock { $0.paths[directory] } ?? "?") + "/" + name
    }
}
