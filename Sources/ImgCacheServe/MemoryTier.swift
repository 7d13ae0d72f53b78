import Synchronization

/// One variant's bytes, shared by every answer that sends them, with the form the HTTP side
/// sends them in made once (a buffer it can write without a copy), not once per answer.
public final class SharedBytes: Sendable {
    public let bytes: [UInt8]
    private let converted = Mutex<(any Sendable)?>(nil)

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public var count: Int { bytes.count }

    /// The bytes as `make` turns them into `T`, made on first use and kept.
    public func converted<T: Sendable>(_ make: ([UInt8]) -> T) -> T {
        converted.withLock { kept in
            if let value = kept as? T { return value }
            let value = make(bytes)
            kept = value
            return value
        }
    }
}

/// Hot variants' bytes in memory (SDImageCache's memory cache, cost-limited), least recently
/// used first out, so that the total stays within `budget` bytes. Shared by every thread.
public final class MemoryTier: Sendable {
    /// One variant's bytes and what its response says of them.
    public struct Item: Sendable {
        public var bytes: [UInt8] { body.bytes }
        public let body: SharedBytes
        public let contentType: String
        public let etag: String
        public let lastModified: String
        /// The cache file they came from, and its inode: a stale copy of a replaced file is dropped.
        public let path: String
        public let inode: UInt64
        /// When the disk was last asked about the file (monotonic seconds).
        public var checkedAt: Double = 0

        public init(bytes: [UInt8], contentType: String, etag: String, lastModified: String, path: String, inode: UInt64,
                    checkedAt: Double = 0) {
            body = SharedBytes(bytes)
            self.contentType = contentType
            self.etag = etag
            self.lastModified = lastModified
            self.path = path
            self.inode = inode
            self.checkedAt = checkedAt
        }
    }

    private struct Entry {
        var item: Item
        var older: String?
        var newer: String?
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var oldest: String?
        var newest: String?
        var bytes = 0
    }

    public let budget: Int
    private let state = Mutex(State())

    public init(budget: Int) {
        self.budget = budget
    }

    /// The bytes held now, and the number of variants.
    public var usage: (bytes: Int, count: Int) { state.withLock { ($0.bytes, $0.entries.count) } }

    /// The item of `key`, made the most recently used; nil when not held.
    public func item(_ key: String) -> Item? {
        state.withLock { state in
            guard let entry = state.entries[key] else { return nil }
            MemoryTier.unlink(key, &state)
            MemoryTier.linkNewest(key, entry.item, &state)
            return entry.item
        }
    }

    /// Holds `item` under `key`, dropping the least recently used until it fits; an item larger
    /// than an eighth of the budget is not held (it would push out many).
    public func insert(_ item: Item, for key: String) {
        guard item.body.count <= budget / 8 else { return }
        state.withLock { state in
            if state.entries[key] != nil { MemoryTier.unlink(key, &state) }
            while state.bytes + item.body.count > budget, let oldest = state.oldest { MemoryTier.unlink(oldest, &state) }
            MemoryTier.linkNewest(key, item, &state)
        }
    }

    /// Forgets `key`.
    public func remove(_ key: String) {
        state.withLock { state in
            if state.entries[key] != nil { MemoryTier.unlink(key, &state) }
        }
    }

    private static func unlink(_ key: String, _ state: inout State) {
        guard let entry = state.entries.removeValue(forKey: key) else { return }
        if let older = entry.older { state.entries[older]?.newer = entry.newer } else { state.oldest = entry.newer }
        if let newer = entry.newer { state.entries[newer]?.older = entry.older } else { state.newest = entry.older }
        state.bytes -= entry.item.body.count
    }

    private static func linkNewest(_ key: String, _ item: Item, _ state: inout State) {
        state.entries[key] = Entry(item: item, older: state.newest, newer: nil)
        if let newest = state.newest { state.entries[newest]?.newer = key } else { state.oldest = key }
        state.newest = key
        state.bytes += item.body.count
    }
}
