/// The misses not yet locked nor queued, because the run already holds as many download locks
/// as it can use soon (`ImageFetcher.downloadLocksAhead`): a URL is locked only when its download
/// is about to start, so that another process is not kept waiting for one that is merely far down
/// this run's queue.
///
/// One queue per server (a single one without `--per-host` or `--rate`, whose server is ""), so
/// that taking the next miss of a server with room costs a look at each server's first miss, not
/// a walk of every waiting URL; across servers the list's order holds (the earliest first).
struct DeferredDownloads {
    private struct Queue {
        var items: [DeferredDownload] = []
        var head = 0
        /// How many were let go from the front: an item's place is its number less this.
        var dropped = 0
    }
    private var queues: [String: Queue] = [:]
    /// Where each waiting key is (its server, and its number in that queue), so that its repeats join it.
    private var places: [KeyFingerprint: (server: String, number: Int)] = [:]
    /// The list's order across servers.
    private var order = 0

    var isEmpty: Bool { places.isEmpty }
    /// Whether `fingerprint`'s miss is waiting here.
    func contains(_ fingerprint: KeyFingerprint) -> Bool { places[fingerprint] != nil }
    /// The slots the queues hold (taken ones not let go yet included), for the tests of their growth.
    var slotCount: Int { queues.values.reduce(0) { $0 + $1.items.count } }

    mutating func append(_ outcome: LookupOutcome, _ request: PendingFetch, server: String) {
        // Changed in place (a copy of a queue taken out of the dictionary would copy its items).
        let number = queues[server].map { $0.dropped + $0.items.count } ?? 0
        places[request.fingerprint] = (server, number)
        queues[server, default: Queue()].items.append(DeferredDownload(outcome: outcome, request: request, order: order))
        order += 1
    }

    /// The earliest miss (in the list's order) of a server `canStart` takes, off its queue.
    mutating func take(where canStart: (String) -> Bool = { _ in true }) -> DeferredDownload? {
        var best: (server: String, order: Int)?
        for (server, queue) in queues where queue.head < queue.items.count {
            let first = queue.items[queue.head].order
            if best.map({ first < $0.order }) ?? true, canStart(server) { best = (server, first) }
        }
        guard let server = best?.server else { return nil }
        return queues[server].flatMap { _ in takeFirst(of: server) }
    }

    /// The first miss of `server`'s queue, taken off it (the queue changed in place).
    private mutating func takeFirst(of server: String) -> DeferredDownload? {
        guard let queue = queues[server], queue.head < queue.items.count else { return nil }
        let next = queue.items[queue.head]
        places[next.request.fingerprint] = nil
        if queue.head + 1 == queue.items.count {
            queues[server] = nil
            return next
        }
        queues[server]!.head += 1
        // Taken slots are let go once they are half the queue: a queue fed as fast as it is
        // taken never empties, and would otherwise keep a slot for every URL.
        let head = queues[server]!.head
        if head >= 256, head * 2 >= queues[server]!.items.count {
            queues[server]!.items.removeFirst(head)
            queues[server]!.dropped += head
            queues[server]!.head = 0
        }
        return next
    }

    /// Adds input `index` as a repeat of the waiting miss of `fingerprint`; false when there is none.
    mutating func join(_ fingerprint: KeyFingerprint, index: Int, url: String) -> Bool {
        guard let place = places[fingerprint], let dropped = queues[place.server]?.dropped else { return false }
        queues[place.server]!.items[place.number - dropped].request.repeats.append((index, url))
        return true
    }
}

/// A miss whose download lock is not taken yet, with what its lookup found.
struct DeferredDownload {
    let outcome: LookupOutcome
    var request: PendingFetch
    /// Its place in the list's order, across servers.
    let order: Int
}
