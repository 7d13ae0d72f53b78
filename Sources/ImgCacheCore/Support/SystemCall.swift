#if canImport(Glibc)
import Glibc
#endif
import CImgCacheShims
import Synchronization

/// The calls that open, examine, list, read, write, rename, remove, lock and
/// set metadata on the cache's files, in one place, and the only place that
/// reads `errno`: each returns its value or the `Errno` it failed with (as
/// swift-system's `valueOrErrno`), and a call a signal interrupted is taken
/// up again here. Each goes through `SystemCallFaults` first: a test can make
/// any of them fail with ENOSPC, EACCES, EIO or EINTR for the files under one
/// folder, without a broken disk. When no fault is armed the cost is one
/// atomic load per call.
package enum SystemCall {
    static func open(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Result<Int32, Errno> {
        let result = faulting(.open, path: path, retrying: true) { Glibc.open(path, flags, mode) }
        if case .success(let descriptor) = result, SystemCallFaults.isArmed { SystemCallFaults.opened(descriptor, path: path) }
        return result
    }

    /// `openat` refusing any link on the way and any path out of `directory` (openat2);
    /// `path` is the whole path, for messages and faults.
    static func openBeneath(_ directory: Int32, _ name: String, _ flags: Int32, path: String) -> Result<Int32, Errno> {
        let result = faulting(.open, path: path, retrying: true) { ic_open_beneath(directory, name, flags) }
        if case .success(let descriptor) = result, SystemCallFaults.isArmed { SystemCallFaults.opened(descriptor, path: path) }
        return result
    }

    static func openat(_ directory: Int32, _ name: String, _ flags: Int32, _ mode: mode_t = 0) -> Result<Int32, Errno> {
        let result = faulting(.open, descriptor: directory, name: name, retrying: true) { Glibc.openat(directory, name, flags, mode) }
        if case .success(let descriptor) = result, SystemCallFaults.isArmed {
            SystemCallFaults.opened(descriptor, path: SystemCallFaults.path(of: directory, name: name))
        }
        return result
    }

    /// Closes `descriptor`; a failure to close is not told (the data was written or reported before).
    static func close(_ descriptor: Int32) {
        if SystemCallFaults.isArmed { SystemCallFaults.closed(descriptor) }
        _ = Glibc.close(descriptor)
    }

    static func mkdir(_ path: String, _ mode: mode_t) -> Result<Void, Errno> {
        faulting(.makeDirectory, path: path) { Glibc.mkdir(path, mode) }.map { _ in }
    }

    static func access(_ path: String, _ mode: Int32) -> Result<Void, Errno> {
        faulting(.access, path: path) { Glibc.access(path, mode) }.map { _ in }
    }

    static func lstat(_ path: String) -> Result<stat, Errno> {
        var info = Glibc.stat()
        return faulting(.status, path: path) { Glibc.lstat(path, &info) }.map { _ in info }
    }

    /// `stat`, following a symbolic link.
    static func stat(following path: String) -> Result<stat, Errno> {
        var info = Glibc.stat()
        return faulting(.status, path: path) { Glibc.fstatat(AT_FDCWD, path, &info, 0) }.map { _ in info }
    }

    static func fstat(_ descriptor: Int32) -> Result<stat, Errno> {
        var info = Glibc.stat()
        return faulting(.status, descriptor: descriptor) { Glibc.fstat(descriptor, &info) }.map { _ in info }
    }

    static func fstatat(_ directory: Int32, _ name: String, _ flags: Int32) -> Result<stat, Errno> {
        var info = Glibc.stat()
        return faulting(.status, descriptor: directory, name: name) { Glibc.fstatat(directory, name, &info, flags) }.map { _ in info }
    }

    static func read(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Result<Int, Errno> {
        faulting(.read, descriptor: descriptor, retrying: true) { Glibc.read(descriptor, buffer, count) }
    }

    static func pread(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int, _ offset: off_t) -> Result<Int, Errno> {
        faulting(.read, descriptor: descriptor, retrying: true) { Glibc.pread(descriptor, buffer, count, offset) }
    }

    static func write(_ descriptor: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Result<Int, Errno> {
        faulting(.write, descriptor: descriptor, retrying: true) { Glibc.write(descriptor, buffer, count) }
    }

    /// A second descriptor of an open folder, for `fdopendir` (which takes over
    /// the one it is given); the fault of a folder that cannot be listed.
    static func dup(_ descriptor: Int32) -> Result<Int32, Errno> {
        faulting(.list, descriptor: descriptor) { Glibc.dup(descriptor) }
    }

    static func lseek(_ descriptor: Int32, _ offset: off_t, _ whence: Int32) -> Result<off_t, Errno> {
        valueOrErrno { Glibc.lseek(descriptor, offset, whence) }
    }

    static func chmod(_ path: String, _ mode: mode_t) -> Result<Void, Errno> {
        faulting(.setTime, path: path) { Glibc.chmod(path, mode) }.map { _ in }
    }

    static func fchmod(_ descriptor: Int32, _ mode: mode_t) -> Result<Void, Errno> {
        faulting(.write, descriptor: descriptor) { Glibc.fchmod(descriptor, mode) }.map { _ in }
    }

    static func ftruncate(_ descriptor: Int32, _ length: off_t) -> Result<Void, Errno> {
        faulting(.write, descriptor: descriptor) { Glibc.ftruncate(descriptor, length) }.map { _ in }
    }

    static func rename(_ source: String, _ destination: String) -> Result<Void, Errno> {
        faulting(.rename, path: destination) { Glibc.rename(source, destination) }.map { _ in }
    }

    static func renameat(_ directory: Int32, _ source: String, _ destination: String) -> Result<Void, Errno> {
        faulting(.rename, descriptor: directory, name: destination) { Glibc.renameat(directory, source, directory, destination) }.map { _ in }
    }

    static func unlink(_ path: String) -> Result<Void, Errno> {
        faulting(.remove, path: path) { Glibc.unlink(path) }.map { _ in }
    }

    static func unlinkat(_ directory: Int32, _ name: String, _ flags: Int32) -> Result<Void, Errno> {
        faulting(.remove, descriptor: directory, name: name) { Glibc.unlinkat(directory, name, flags) }.map { _ in }
    }

    static func utimensat(_ path: String, _ times: UnsafePointer<timespec>, _ flags: Int32) -> Result<Void, Errno> {
        faulting(.setTime, path: path) { Glibc.utimensat(AT_FDCWD, path, times, flags) }.map { _ in }
    }

    /// The size of the attribute's value (copied into `value` when it has room).
    static func getAttribute(_ path: String, _ name: String, _ value: UnsafeMutableRawPointer?, _ size: Int) -> Result<Int, Errno> {
        faulting(.attribute, path: path) { ic_get_attribute(path, name, value, size) }
    }

    static func setAttribute(_ path: String, _ name: String, _ value: UnsafeRawPointer?, _ size: Int) -> Result<Void, Errno> {
        faulting(.attribute, path: path) { ic_set_attribute(path, name, value, size) }.map { _ in }
    }

    /// Takes byte `index` of an open file, shared or exclusive, waiting for it
    /// when `wait`; a wait a signal interrupts is taken up again.
    static func lockByte(_ descriptor: Int32, _ index: Int, exclusive: Bool, wait: Bool) -> Result<Void, Errno> {
        faulting(.lock, descriptor: descriptor, retrying: wait) {
            ic_lock_byte(descriptor, index, exclusive ? 1 : 0, wait ? 1 : 0)
        }.map { _ in }
    }

    static func unlockByte(_ descriptor: Int32, _ index: Int) {
        _ = ic_unlock_byte(descriptor, index)
    }

    /// A listing stream of the folder open as `descriptor`, which it takes over.
    static func openDirectoryStream(_ descriptor: Int32) -> Result<OpaquePointer, Errno> {
        guard let stream = fdopendir(descriptor) else { return .failure(.current) }
        return .success(stream)
    }

    /// The next entry of a listing stream; nil at its end.
    static func readDirectory(_ stream: OpaquePointer) -> Result<UnsafeMutablePointer<dirent>?, Errno> {
        Errno.current = Errno(0)
        guard let entry = readdir(stream) else {
            let errno = Errno.current
            return errno.rawValue == 0 ? .success(nil) : .failure(errno)
        }
        return .success(entry)
    }

    /// `sigtimedwait`: the signal of `set` that arrived within `timeout`.
    static func waitForSignal(_ set: inout sigset_t, timeout: inout timespec) -> Result<Int32, Errno> {
        valueOrErrno { sigtimedwait(&set, nil, &timeout) }
    }

    /// Whether process `pid` is gone (signal 0 answered "no such process").
    static func processIsGone(_ pid: pid_t) -> Bool {
        if case .failure(Errno(ESRCH)) = valueOrErrno({ kill(pid, 0) }) { return true }
        return false
    }

    /// `getcwd`: the process's working directory.
    static func currentDirectory() -> Result<String, Errno> {
        guard let cwd = getcwd(nil, 0) else { return .failure(.current) }
        defer { free(cwd) }
        return .success(String(cString: cwd))
    }

    /// The value of a call that returns -1 and sets `errno` on failure, or that
    /// `errno`; with `retrying`, a call a signal interrupted is made again.
    static func valueOrErrno<Value: BinaryInteger>(retrying: Bool = false, _ call: () -> Value) -> Result<Value, Errno> {
        while true {
            let value = call()
            guard value == -1 else { return .success(value) }
            let errno = Errno.current
            if retrying, errno == .interrupted { continue }
            return .failure(errno)
        }
    }

    /// `call`, unless an armed fault fails it first for `path`.
    private static func faulting<Value: BinaryInteger>(_ kind: SystemCallFaults.Call, path: String, retrying: Bool = false,
                                                         _ call: () -> Value) -> Result<Value, Errno> {
        while true {
            if SystemCallFaults.isArmed, let fault = SystemCallFaults.inject(kind, path: path) {
                if retrying, fault == .interrupted { continue }
                return .failure(fault)
            }
            return valueOrErrno(retrying: retrying, call)
        }
    }

    /// `call`, unless an armed fault fails it first for the file open as
    /// `descriptor` (or `name` in that folder).
    private static func faulting<Value: BinaryInteger>(_ kind: SystemCallFaults.Call, descriptor: Int32, name: String? = nil,
                                                         retrying: Bool = false, _ call: () -> Value) -> Result<Value, Errno> {
        while true {
            if SystemCallFaults.isArmed, let fault = SystemCallFaults.inject(kind, descriptor: descriptor, name: name) {
                if retrying, fault == .interrupted { continue }
                return .failure(fault)
            }
            return valueOrErrno(retrying: retrying, call)
        }
    }
}

extension Result where Failure == Errno {
    /// The value, or a `SystemError` saying what could not be done to which file.
    func get(_ operation: String, path: String? = nil) throws(SystemError) -> Success {
        switch self {
        case .success(let value): return value
        case .failure(let errno): throw SystemError(operation, path: path, errno: errno)
        }
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

    static func inject(_ call: Call, path: String) -> Errno? {
        state.withLock { state in
            for (id, fault) in state.faults where fault.calls.contains(call) && path.hasPrefix(fault.folder) {
                if let remaining = fault.remaining {
                    if remaining <= 0 { continue }
                    state.faults[id]?.remaining = remaining - 1
                }
                state.hits[id, default: 0] += 1
                return fault.errno
            }
            return nil
        }
    }

    static func inject(_ call: Call, descriptor: Int32, name: String? = nil) -> Errno? {
        guard let path = state.withLock({ $0.paths[descriptor] }) else { return nil }
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
