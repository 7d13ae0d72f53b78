import Synchronization

/// The lookups of a list (prefetch, fetch -i), made on the list's reader
/// thread as lines arrive, so that each URL crosses to the manager's thread
/// once, in a batch, with its lookup done: a warm run keeps both cores busy
/// (one reads and looks up, one answers) without a message per URL.
///
/// For prefetch it also skips repeats, by a 16-byte fingerprint of the key,
/// before any lookup: the only state that grows with a list.
///
/// Only the list's reader thread calls `look`; its state is behind a mutex
/// all the same, taken once per batch, so that the compiler checks it.
final class ListLookup: Sendable {
    /// A list line as the manager receives it.
    enum Item: Sendable {
        case looked(url: String, key: CacheKey, fingerprint: KeyFingerprint, outcome: LookupOutcome, pin: BytePin?)
        /// Left for the manager's thread to look up, so that both threads share the lookups.
        case unlooked(url: String, key: CacheKey, fingerprint: KeyFingerprint, pin: BytePin?)
        /// A URL whose key came earlier in the list (prefetch only).
        case repeated(url: String)
        /// A URL of another machine's part of the list (`--shard`).
        case elsewhere(url: String)
        /// Everything but a URL, as the list gave it.
        case other(URLList.Item)
    }

    private let lookup: Lookup
    private let ttl: AgeLimit
    private let skipsRepeats: Bool
    private struct State {
        /// The keys seen, by 64 bits of each fingerprint: 8 bytes a key rather than 16
        /// (a chance collision among a billion keys is about 3 in 100).
        var seen: Set<UInt64> = []
    }
    private let state = Mutex(State())

    init(lookup: Lookup, failedTTL: AgeLimit, skipsRepeats: Bool) {
        self.lookup = lookup
        self.ttl = failedTTL
        self.skipsRepeats = skipsRepeats
    }

    /// `items` in their order, every other URL looked up (the rest are left
    /// to the manager's thread: a warm run's lookups then use two cores).
    func look(_ items: [URLList.Item]) -> [Item] {
        state.withLock { state in look(items, &state) }
    }

    private func look(_ items: [URLList.Item], _ state: inout State) -> [Item] {
        var leaveNext = false
        return items.map { item in
            guard case .url(let given, let line) = item else { return .other(item) }
            let pin: BytePin?
            do throws(ValueError) { pin = try BytePin.parse(given) } catch { return .other(.rejected(given, line: line, reason: error.reason)) }
            // A fragment never reaches a server, so it is no part of the request or the key.
            let url = URLText.withoutFragment(given)
            let key = lookup.settings.cacheKey(for: url)
            let fingerprint = KeyFingerprint(key, pin: pin)
            if let shard = lookup.settings.shard, !shard.contains(key) { return .elsewhere(url: url) }
            if skipsRepeats, !state.seen.insert(fingerprint.high ^ fingerprint.low).inserted { return .repeated(url: url) }
            leaveNext.toggle()
            if !leaveNext { return .unlooked(url: url, key: key, fingerprint: fingerprint, pin: pin) }
            let ttl = self.ttl
            return .looked(url: url, key: key, fingerprint: fingerprint,
                           outcome: lookup.run(url, key: key, ttl: { ttl }), pin: pin)
        }
    }
}
