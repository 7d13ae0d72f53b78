#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Which keys each shard folder (and the failed-URL folder) holds, as this
/// process last listed it, so that looking up a key that is not there costs no
/// system call. An entry can have a dozen names (see
/// `CacheKey.candidateFileNames`): without a listing, a miss asks the disk for
/// each of them, and then for a failure record.
///
/// A listing stands while its folder's generation (`ShardGenerations`) is the
/// one read before it was taken: every store raises the generation after its
/// file appears, so a listing that might lack a file is never used. A listing
/// can name files removed since; those are looked for as before and not found.
/// A folder is listed only after a lookup in it missed, so a run whose lookups
/// hit lists nothing. Every store raises the generation, whether or not this
/// process keeps listings.
final class ShardListings: Sendable {
    /// Whether lookups use listings (runs over lists; a single lookup would list for nothing).
    let keepsListings: Bool
    private let lockPath: String
    private let state = Mutex(State())

    /// Folders with more names than this are not kept (a lookup then asks for each name).
    static let maximumNames = 16_384

    private struct State {
        /// nil: not mapped yet; .some(nil): could not be (then no listing is ever used).
        var generations: ShardGenerations??
        var listings: [Listing?] = Array(repeating: nil, count: ShardGenerations.count)
    }

    private struct Listing {
        let generation: UInt64
        /// 64 bits of each digest in the folder; nil: too many names to keep.
        var digests: Set<UInt64>?
    }

    /// The generations a lookup saw before it looked: if neither its shard's nor the
    /// failures' changed since, nothing it could have found was stored meanwhile.
    struct Stamp: Sendable, Equatable {
        let shard: Int
        let shardGeneration: UInt64
        let failuresGeneration: UInt64
    }

    init(lockPath: String, keepsListings: Bool) {
        self.lockPath = lockPath
        self.keepsListings = keepsListings
    }

    /// The counters, mapped on first use (and tried again after `attach`); nil
    /// when they cannot be, or were lost (the lock file cut short under them).
    private static func generations(_ state: inout State, lockPath: String) -> ShardGenerations? {
        if let mapped = state.generations {
            guard let mapped, !mapped.isIntact else { return mapped }
            // Lost for good: every listing goes, and lookups ask the disk again.
            state.listings = Array(repeating: nil, count: ShardGenerations.count)
            state.generations = .some(nil)
            return nil
        }
        let mapped = ShardGenerations(lockPath: lockPath)
        state.generations = .some(mapped)
        return mapped
    }

    /// Maps the counters again if they could not be before (the lock file was just made).
    func attach() {
        state.withLock { state in
            if case .some(.none) = state.generations { state.generations = nil }
        }
    }

    /// Folder `slot`'s generation before a lookup looks (nil: no listings here). Read
    /// first, so that a file stored while the lookup looks shows as a newer one.
    func generation(of slot: Int) -> UInt64? {
        guard keepsListings else { return nil }
        return state.withLock { state in ShardListings.generations(&state, lockPath: lockPath)?.current(slot) }
    }

    /// What a lookup of a key in `shard` sees before it looks (nil: no listings here).
    func stamp(_ shard: Int) -> Stamp? {
        guard keepsListings else { return nil }
        return state.withLock { state in
            guard let generations = ShardListings.generations(&state, lockPath: lockPath) else { return nil }
            return Stamp(shard: shard, shardGeneration: generations.current(shard),
                         failuresGeneration: generations.current(ShardGenerations.failures))
        }
    }

    /// Whether anything was stored in the stamp's shard, or any failure recorded, since it was taken.
    func changed(since stamp: Stamp) -> Bool {
        state.withLock { state in
            guard let generations = ShardListings.generations(&state, lockPath: lockPath) else { return true }
            return generations.current(stamp.shard) != stamp.shardGeneration
                || generations.current(ShardGenerations.failures) != stamp.failuresGeneration
        }
    }

    /// Whether folder `slot`'s listing at `generation` says no file there begins with `key`'s digest.
    func excludes(_ key: CacheKey, in slot: Int, at generation: UInt64) -> Bool {
        // The key's digest as read already (the 64 bits `bits(of:)` reads from a name).
        let bits = key.digestHigh
        return state.withLock { state in
            guard let listing = state.listings[slot], listing.generation == generation,
                  let digests = listing.digests else { return false }
            return !digests.contains(bits)
        }
    }

    /// After a lookup in folder `slot` found nothing: lists the folder at `path`
    /// (or records it empty when the lookup found no folder), unless a listing
    /// of this generation is kept already.
    func record(_ slot: Int, path: String, generation: UInt64, folderMissing: Bool) {
        let kept = state.withLock { state in state.listings[slot]?.generation == generation }
        guard !kept else { return }
        let digests = folderMissing ? .some([]) : ShardListings.list(path)
        guard let digests else { return }
        state.withLock { state in
            state.listings[slot] = Listing(generation: generation, digests: digests)
        }
    }

    /// After a file named for `digest` appeared in folder `slot`: raises the
    /// folder's generation, and keeps this process's listing of it when nothing
    /// else was stored there since.
    func added(_ digest: String, in slot: Int) {
        let bits = ShardListings.bits(of: digest.utf8)
        state.withLock { state in
            guard let generations = ShardListings.generations(&state, lockPath: lockPath) else { return }
            let before = generations.advance(slot)
            guard var listing = state.listings[slot] else { return }
            guard listing.generation == before, let bits else {
                state.listings[slot] = nil
                return
            }
            listing.digests?.insert(bits)
            state.listings[slot] = Listing(generation: before + 1, digests: listing.digests)
        }
    }

    /// After `key`'s entry appeared in its shard.
    func added(_ key: CacheKey) { added(key.digest, in: key.shardIndex) }

    /// After an entry reappeared in `shard` (a clean put a used one back).
    func restored(_ shard: Int) {
        state.withLock { state in
            _ = ShardListings.generations(&state, lockPath: lockPath)?.advance(shard)
            state.listings[shard] = nil
        }
    }

    /// The digests named in the folder at `path` (none when it does not exist):
    /// .some(nil) when there are too many to keep, nil when it cannot be listed.
    private static func list(_ path: String) -> Set<UInt64>?? {
        // Through SystemCall, the one reader of errno: a folder that is not there lists as empty.
        let descriptor: Int32
        switch SystemCall.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW) {
        case .success(let opened): descriptor = opened
        case .failure(.noSuchFile): return .some([])
        case .failure: return nil
        }
        guard case .success(let stream) = SystemCall.openDirectoryStream(descriptor) else {
            SystemCall.close(descriptor)
            return nil
        }
        defer { closedir(stream) }
        var digests = Set<UInt64>()
        while case .success(let found) = SystemCall.readDirectory(stream), let entry = found {
            let named: UInt64? = withUnsafeBytes(of: entry.pointee.d_name) { (raw: UnsafeRawBufferPointer) -> UInt64? in
                ShardListings.bits(of: raw.prefix { $0 != 0 })
            }
            guard let named else { continue }
            digests.insert(named)
            if digests.count > maximumNames { return .some(nil) }
        }
        return .some(digests)
    }

    /// 64 bits of the digest a name begins with: 32 hex digits, alone or
    /// before a dot. nil for any other name (the log, temporary files).
    static func bits<Name: Collection>(of name: Name) -> UInt64? where Name.Element == UInt8 {
        var value: UInt64 = 0
        var count = 0
        for byte in name {
            if count == 32 { return byte == UInt8(ascii: ".") ? value : nil }
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            default: return nil
            }
            if count < 16 { value = value << 4 | UInt64(digit) }
            count += 1
        }
        return count == 32 ? value : nil
    }
}
