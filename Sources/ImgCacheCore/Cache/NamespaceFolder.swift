#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The namespace folder, kept open for a run's lookups, so that an entry's
/// file is opened relative to it with no link followed on the way (openat2):
/// a hit then needs no separate check that its shard folder is not a link.
/// A single lookup opens it first; a run over a list, when a lookup first
/// finds a file (until then each shard is checked once, and a missing one
/// answers for all its names). Where openat2 is missing (Linux before 5.6),
/// lookups check each shard folder instead.
final class NamespaceFolder: Sendable {
    let path: String
    private let state = Mutex(State())

    private struct State {
        var folder = Folder.notOpened
        /// Descriptors replaced or given up, closed only at the end: another thread may
        /// still be opening a file through one (a closed number could be reused meanwhile).
        var retired: [Int32] = []
    }

    private enum Folder {
        case notOpened
        case open(Int32)
        /// openat2 is missing: lookups check shard folders instead.
        case unusable
    }

    init(path: String) { self.path = path }

    deinit {
        state.withLock { state in
            if case .open(let descriptor) = state.folder { SystemCall.close(descriptor) }
            state.retired.forEach(SystemCall.close)
        }
    }

    /// Whether the folder is open (a lookup over a list opens it when it first finds a file).
    var isOpen: Bool {
        state.withLock { state in if case .open = state.folder { return true } else { return false } }
    }

    /// Opens the folder if it is not open yet; whether it is open (false: not made yet, or
    /// openat2 is missing). A single lookup opens it before it looks, so that no shard needs checking.
    func open() -> Bool { descriptor != nil }

    /// Closes the folder, to be opened again by the next lookup
    /// (a file found by path but not through the folder: the folder may have been made anew).
    func reopen() {
        state.withLock { state in
            if case .open(let descriptor) = state.folder {
                state.retired.append(descriptor)
                state.folder = .notOpened
            }
        }
    }

    private var descriptor: Int32? {
        state.withLock { state in
            switch state.folder {
            case .open(let descriptor): return descriptor
            case .unusable: return nil
            case .notOpened:
                guard case .success(let descriptor) = SystemCall.open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) else {
                    // Not made yet: tried again later.
                    return nil
                }
                state.folder = .open(descriptor)
                return descriptor
            }
        }
    }

    /// Opens `relative` (a shard and a file name) for reading, refusing links and
    /// FIFOs' waits; nil when openat2 is missing (then use paths).
    func openFile(_ relative: String) -> Result<Int32, Errno>? {
        guard let descriptor else { return nil }
        let opened = SystemCall.openBeneath(descriptor, relative, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, path: path + "/" + relative)
        if case .failure(let errno) = opened, errno.rawValue == ENOSYS {
            state.withLock { state in
                if case .open(let descriptor) = state.folder { state.retired.append(descriptor) }
                state.folder = .unusable
            }
            return nil
        }
        return opened
    }
}
