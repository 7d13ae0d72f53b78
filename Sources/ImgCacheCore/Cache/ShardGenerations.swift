#if canImport(Glibc)
import Glibc
#endif
import CImgCacheShims

/// A counter per shard, raised after every entry a store adds to it (and one
/// raised after every failure recorded), kept in
/// the namespace's lock file and mapped into each process that uses it: a
/// process can tell that nothing was added to a shard since it last listed it
/// by reading memory, without a system call (see `ShardListings`).
///
/// The counters only grow, so a crash at any moment leaves them usable; a
/// program that cuts the file short while it is mapped does not kill the
/// process (the fault is caught, see `isIntact`). Where
/// the lock file is on a network or FUSE file system (another machine's writes
/// would not show in a mapping), or cannot be written, there are none.
final class ShardGenerations: @unchecked Sendable {
    // @unchecked: `counters` points into a shared mapping that lives as long as this
    // object and is only read and written with atomic operations (the C shim's).
    private let counters: UnsafeMutablePointer<UInt64>
    /// One counter a shard, and one for the failed-URL records.
    static let count = 257
    /// The counter raised after each failure recorded.
    static let failures = 256

    /// Maps the counters of the lock file at `lockPath`; nil when it is missing or cannot be mapped.
    init?(lockPath: String) {
        guard case .success(let descriptor) = FileSystem.openRegular(lockPath, O_RDWR) else { return nil }
        // The mapping outlives the descriptor.
        defer { SystemCall.close(descriptor) }
        guard let mapped = ic_map_counters(descriptor, ShardGenerations.count) else { return nil }
        counters = mapped
    }

    deinit { ic_unmap_counters(counters, ShardGenerations.count) }

    /// False once the lock file was cut short under the mapping by another program
    /// (the fault is caught and the pages become private zeros): then the counters say
    /// nothing of other processes' stores, and must not be used.
    var isIntact: Bool { ic_counters_lost(counters) == 0 }

    /// Counter `slot`'s value now (a shard, or `failures`).
    func current(_ slot: Int) -> UInt64 { ic_counter_load(counters, slot) }

    /// Raises counter `slot`, after something was added to its folder; the value before.
    @discardableResult
    func advance(_ slot: Int) -> UInt64 { ic_counter_advance(counters, slot) }
}
