/// The remote stores of one run, the second level of the cache: read after
/// a local miss and before the origin, written after an origin download.
/// A store that fails is given up for the rest of the run and marked down
/// for a minute (`RemoteHealth`), so it costs at most one timeout: a remote
/// never fails a fetch. The manager reaches the stores only through here.
/// Owned by the manager's thread.
final class RemoteTier {
    /// A store and whether the run still uses it.
    private struct Store {
        let backend: any RemoteBackend
        var inUse = true
        /// It answered a write "not allowed" (a read-only share): still read, no longer written.
        var refusesWrites = false
    }

    private var stores: [Store] = []
    let namespace: String
    /// The longest object read: one holding an image over `--max-size` is refused as it comes.
    private let objectLimit: Int
    private let health: RemoteHealth
    private let report: (String, DownloadError?) -> Void
    var statistics = RemoteStatistics()
    /// Objects found damaged, by store and key: written anew, not "if absent".
    private var damaged: Set<Damaged> = []
    /// Bad objects each store gave since its last good one.
    private var badInARow: [Int: Int] = [:]
    /// A store that gives this many bad objects in a row answers garbage: given up.
    static let badObjectsToGiveUp = 3
    /// How long each store's lookups take, and the origin's downloads, lately.
    private var lookupTimes: [Int: RecentAverage] = [:]
    private var originTimes = RecentAverage()
    /// How long each store's writes take, lately.
    private var writeTimes: [Int: RecentAverage] = [:]
    /// A store is judged slow only once it answered this many lookups, and the origin this many downloads.
    static let lookupsToJudge = 8, downloadsToJudge = 4
    /// Lookups faster than this on average are never slow: between two fast servers, a difference
    /// is noise, and the store's writes serve the other machines.
    static let slowLookup = 0.25

    private struct Damaged: Hashable {
        let store: Int
        let key: RemoteKey
    }

    /// Makes the backends of `specs`; one marked down lately, or that cannot be
    /// set up (credentials missing), is left out, and said so through `report`.
    init(specs: [RemoteSpec], namespace: String, imageLimit: Int64?, downloads: any DownloadScheduling, environment: Environment,
         health: RemoteHealth, now: Double, report: @escaping (String, DownloadError?) -> Void) {
        self.namespace = namespace
        objectLimit = RemoteObject.maximumLength(forImagesUpTo: imageLimit)
        self.health = health
        self.report = report
        for spec in specs {
            if let since = health.downSince(spec, now: now) {
                report("remote \(spec.identity) failed \(Timestamp.age(since, now: now)); skipped for a minute", nil)
                // Nothing of this run reaches it: counted, so that remote_errors 0 still means every write landed.
                statistics.errors += 1
                continue
            }
            do {
                stores.append(Store(backend: try RemoteBackends.make(spec, downloads: downloads, environment: environment)))
            } catch {
                report("remote \(spec.identity) not used: \(error.reason)", error.cause)
                statistics.errors += 1
            }
        }
    }

    /// The first store in use after `index` (from the first when nil).
    func readable(after index: Int?) -> Int? {
        stores.indices.first { $0 > (index ?? -1) && stores[$0].inUse }
    }

    /// Whether the run still uses store `index` (answers from one given up are not taken).
    func isInUse(_ index: Int) -> Bool { stores[index].inUse }

    /// The stores in use that take writes.
    private var writable: [Int] {
        stores.indices.filter { stores[$0].inUse && !stores[$0].refusesWrites && !stores[$0].backend.spec.readOnly }
    }

    /// Whether any store in use takes writes.
    var takesWrites: Bool { !writable.isEmpty }
    /// How many stores a write goes to.
    var writeTargets: Int { writable.count }

    /// How store `index` is named in messages.
    func identity(of index: Int) -> String { stores[index].backend.spec.identity }

    /// An entry's place in the stores.
    func place(of key: CacheKey) -> RemoteKey { RemoteKey(namespace: namespace, digest: key.digest) }

    /// Asks store `index` for `key`'s object; the answer comes with the seconds it took.
    func get(_ key: CacheKey, from index: Int, completion: @escaping @Sendable (Result<[UInt8]?, RemoteFailure>, Double) -> Void) {
        stores[index].backend.get(place(of: key), limit: objectLimit, completion: completion)
    }

    /// Store `index` gave a damaged object for `key` (of `url`): counted, and written anew
    /// later; the store is given up once it has given `badObjectsToGiveUp` in a
    /// row. Said once: by the give-up, or at the run's end (`close`) for a store that gave a
    /// few among good ones.
    func markDamaged(_ key: CacheKey, of url: String, in index: Int, reason: String, now: Double) {
        damaged.insert(Damaged(store: index, key: place(of: key)))
        badInARow[index, default: 0] += 1
        guard badInARow[index]! >= RemoteTier.badObjectsToGiveUp else {
            statistics.errors += 1
            badObjects[index, default: BadObjects()].add(url: url, reason: reason)
            return
        }
        badObjects[index] = nil
        giveUp(index, RemoteFailure("\(RemoteTier.badObjectsToGiveUp) bad objects in a row (the last: \(reason))"), now: now)
    }

    /// The bad objects a store gave that it was not given up for, said when the run ends.
    private struct BadObjects {
        var count = 0
        var lastURL = ""
        var lastReason = ""

        mutating func add(url: String, reason: String) {
            count += 1
            lastURL = url
            lastReason = reason
        }
    }
    private var badObjects: [Int: BadObjects] = [:]

    /// A download from the origin took `seconds`, from its first attempt's start.
    func timeOriginDownload(seconds: Double) {
        originTimes.add(seconds)
    }

    /// Store `index` answered a lookup after `seconds`. Once it has answered a few, a store whose
    /// lookups take longer on average than the origin's downloads (and over `slowLookup`) costs
    /// more than it saves: said once, and skipped for the rest of the run (not marked down: the
    /// next run measures again). One given `keep-if-slow` is never judged.
    func timeLookup(by index: Int, seconds: Double) {
        judge(index, "lookups", seconds, in: &lookupTimes)
    }

    /// Store `index` wrote an object in `seconds`, judged as lookups are: a store whose writes are
    /// slower than the origin would hold the run's end back (a run waits for its writes) by far
    /// more than it spares the other machines.
    func timeWrite(by index: Int, seconds: Double) {
        judge(index, "writes", seconds, in: &writeTimes)
    }

    /// Adds `seconds` to store `index`'s `times` of `what`, and gives it up for the run once they
    /// are, on average, slower than the origin's downloads and `slowLookup`.
    private func judge(_ index: Int, _ what: String, _ seconds: Double, in times: inout [Int: RecentAverage]) {
        guard stores[index].inUse, !stores[index].backend.spec.keepIfSlow else { return }
        times[index, default: RecentAverage()].add(seconds)
        let average = times[index]!
        guard average.count >= RemoteTier.lookupsToJudge, originTimes.count >= RemoteTier.downloadsToJudge,
              average.average > RemoteTier.slowLookup, average.average > originTimes.average else { return }
        let reason = "\(what) take \(RecentAverage.format(average.average)) on average, "
            + "downloads from the origin \(RecentAverage.format(originTimes.average))"
        giveUp(index, RemoteFailure(reason), now: 0, slow: true)
    }

    /// Store `index` gave a good object: its bad ones were not a run of garbage.
    func markGood(_ index: Int) {
        badInARow[index] = nil
    }

    /// Writes `object` as `key`'s to every store in use that takes writes:
    /// replacing what is there when asked or when the store's was damaged,
    /// else only where there is none. The number of writes started.
    func put(_ object: [UInt8], as key: CacheKey, replacing: Bool,
             completion: @escaping @Sendable (Int, Result<Bool, RemoteFailure>, Double) -> Void) -> Int {
        let place = place(of: key)
        let targets = writable
        for index in targets {
            let replaces = damaged.remove(Damaged(store: index, key: place)) != nil || replacing
            stores[index].backend.put(place, object, replacing: replaces) { completion(index, $0, $1) }
        }
        return targets.count
    }

    var isEmpty: Bool { stores.isEmpty }

    /// Store `index` answered a write with "not allowed" (HTTP 401, 403, 405): a
    /// share that is read-only to this machine. Its reads go on; writes stop,
    /// said once with the attribute that says so.
    func refuseWrites(_ index: Int, _ failure: RemoteFailure) {
        guard stores[index].inUse, !stores[index].refusesWrites else { return }
        stores[index].refusesWrites = true
        statistics.errors += 1
        let spec = stores[index].backend.spec
        report("remote \(spec.identity) refuses writes: \(failure.reason); still read, not written "
               + "(add |read-only to its URL to skip the writes)", failure.cause)
    }

    /// Gives store `index` up for the run and marks it down (unless it is only `slow`), saying why once.
    func giveUp(_ index: Int, _ failure: RemoteFailure, now: Double, slow: Bool = false) {
        // The failures of requests already out when it was given up are not the store's errors again.
        guard stores[index].inUse else { return }
        statistics.errors += 1
        stores[index].inUse = false
        // What it still owes is dropped now, not waited for: about one timeout in all.
        stores[index].backend.abandon()
        let spec = stores[index].backend.spec
        // Another store still in use answers next, else the origin.
        let next = stores.contains { $0.inUse } ? "the other stores and the origin answer" : "the origin answers"
        if slow {
            report("remote \(spec.identity) is slow: \(failure.reason); not used for the rest of this run, \(next)", nil)
            return
        }
        health.markDown(spec, now: now)
        report("remote \(spec.identity) failed: \(failure.reason); not used for a minute, \(next)", failure.cause)
    }

    /// The run was interrupted: the stores stop waiting for answers (see `RemoteBackend.interrupt`).
    func interrupt(droppingWrites: Bool) {
        for store in stores { store.backend.interrupt(droppingWrites: droppingWrites) }
    }

    func close() {
        for store in stores { store.backend.close() }
        for (index, bad) in badObjects.sorted(by: { $0.key < $1.key }) where stores[index].inUse {
            let objects = bad.count == 1 ? "a bad object for \(RemoteURL.displayed(bad.lastURL)) (\(bad.lastReason))"
                : "\(bad.count) bad objects (the last for \(RemoteURL.displayed(bad.lastURL)): \(bad.lastReason))"
            let written = stores[index].refusesWrites || stores[index].backend.spec.readOnly ? "" : " and written anew"
            report("remote \(identity(of: index)): \(objects); fetched from the origin\(written)", nil)
        }
        badObjects = [:]
    }
}

/// The average of the last few of a series of durations (all of them until
/// there are `window`, then each new one weighs 1/`window`), and how many came.
private struct RecentAverage {
    static let window = 16.0
    private(set) var average = 0.0
    private(set) var count = 0

    mutating func add(_ seconds: Double) {
        count += 1
        average += (max(0, seconds) - average) / min(Double(count), RecentAverage.window)
    }

    /// "0.52 s", "3 ms".
    static func format(_ seconds: Double) -> String {
        seconds >= 0.1 ? "\(Double(Int((seconds * 100).rounded())) / 100) s" : "\(Int((seconds * 1000).rounded())) ms"
    }
}

/// What the remote stores did in a run.
public struct RemoteStatistics: Equatable, Sendable {
    /// Entries taken from a remote store.
    public var hits = 0
    /// Entries written to remote stores (one per store written).
    public var writes = 0
    /// Failures: of a store (then given up), or of an object (then fetched from the origin).
    public var errors = 0

    public init() {}
}
