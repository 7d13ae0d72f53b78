/// The fetches of a run waiting on the network (a remote store or the
/// origin), each under a slot number its messages carry, and the slot of
/// each key in flight: a request for an image already on its way joins it
/// rather than starting another. The one place requests are coalesced.
/// Owned by the manager's thread.
struct InFlightFetches {
    private var bySlot: [Int: PendingFetch] = [:]
    private var slotByKey: [KeyFingerprint: Int] = [:]
    private var nextSlot = 0

    var isEmpty: Bool { bySlot.isEmpty }

    /// The slots in flight, oldest first.
    var slots: [Int] { bySlot.keys.sorted() }

    /// The fetch in `slot`, if it is still in flight.
    subscript(slot: Int) -> PendingFetch? {
        get { bySlot[slot] }
        set { bySlot[slot] = newValue }
    }

    /// Puts `fetch` in flight under a new slot.
    mutating func add(_ fetch: PendingFetch) -> Int {
        let slot = nextSlot
        nextSlot += 1
        bySlot[slot] = fetch
        slotByKey[fetch.fingerprint] = slot
        return slot
    }

    /// Whether an image with this key is in flight; if so, input `index`
    /// (`url`) is answered with it.
    mutating func join(_ fingerprint: KeyFingerprint, index: Int, url: String) -> Bool {
        guard let slot = slotByKey[fingerprint] else { return false }
        bySlot[slot]?.repeats.append((index, url))
        return true
    }

    /// Whether an image with this key is in flight.
    func contains(_ fingerprint: KeyFingerprint) -> Bool { slotByKey[fingerprint] != nil }

    /// Takes the fetch in `slot` out of flight (it is being answered).
    mutating func remove(_ slot: Int) -> PendingFetch? {
        guard let fetch = bySlot.removeValue(forKey: slot) else { return nil }
        slotByKey[fetch.fingerprint] = nil
        return fetch
    }
}
