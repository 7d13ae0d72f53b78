/// How the manager uses the remote stores, all through `RemoteTier`: a miss
/// asks each store in turn before the origin, an object that passes every
/// check answers it, and a new entry is written to every store that takes
/// writes. Answers come back as messages, as downloads do.
extension ImageFetcher {
    /// Asks remote store `store` for the request in `slot`; the answer comes as a message.
    func askRemote(_ store: Int, slot: Int, _ run: inout FetchRun) {
        guard let tier = remoteTier, let miss = run.inFlight[slot] else { return }
        run.inFlight[slot]?.remoteStore = store
        let messages = self.messages
        log?("\(RemoteURL.displayed(miss.url)): asking remote \(tier.identity(of: store))")
        tier.get(miss.key, from: store) { result, seconds in messages.push(.remote(slot: slot, store: store, result, seconds: seconds)) }
    }

    /// The run was interrupted: the requests waiting for a remote store's answer are answered
    /// `interrupted` now, as cancelled transfers are (a store's late answer finds no request).
    func abandonRemoteLookups<E: Error>(_ run: inout FetchRun, emit: (FetchOutcome) throws(E) -> Void) throws(E) {
        for slot in run.inFlight.slots where run.inFlight[slot]?.remoteStore != nil {
            guard let miss = run.inFlight.remove(slot) else { continue }
            try settle(miss.fingerprint, .failure(stopped(miss.url, run)), first: miss.firstIndex, url: miss.url,
                       repeats: miss.repeats, &run, emit: emit)
        }
    }

    /// A remote store answered for the request in `slot`: an object that passes
    /// every check is stored and answers it; otherwise the next store, or the
    /// origin, is asked. A store that failed is given up for the run.
    func remoteAnswered<E: Error>(slot: Int, store: Int, _ result: Result<[UInt8]?, RemoteFailure>, seconds: Double, _ run: inout FetchRun,
                                  emit: (FetchOutcome) throws(E) -> Void) throws(E) {
        guard let miss = run.inFlight[slot], let tier = remoteTier else { return }
        func finish(_ answer: Result<FetchResult, FetchError>) throws(E) {
            _ = run.inFlight.remove(slot)
            remember(answer, for: miss)
            try settle(miss.fingerprint, answer, first: miss.firstIndex, url: miss.url, repeats: miss.repeats, &run, emit: emit)
        }
        if run.interrupted { return try finish(.failure(stopped(miss.url, run))) }
        let identity = tier.identity(of: store)
        // An answer is timed (a failure gives the store up anyway); a store slower than the origin is skipped.
        if case .success = result { tier.timeLookup(by: store, seconds: seconds) }
        // A store given up while this request was out: its answer is not taken, nor counted again.
        switch tier.isInUse(store) ? result : .success(nil) {
        case .success(let data?):
            switch downloadStore.storeRemote(data, for: miss, from: identity) {
            case .stored(let fetched):
                tier.statistics.hits += 1
                tier.markGood(store)
                return try finish(.success(fetched))
            case .failed(let error):
                return try finish(.failure(error))
            case .overLimits(let reason):
                log?("\(RemoteURL.displayed(miss.url)): remote \(identity) has it, but \(reason); fetched from the origin")
            case .defective(let reason):
                // A bad object is a miss: the origin answers, and the object is written anew.
                log?("\(RemoteURL.displayed(miss.url)): bad object in remote \(identity) (\(reason)); fetched from the origin")
                tier.markDamaged(miss.key, of: miss.url, in: store, reason: reason, now: WallClock.now())
            }
        case .success(nil):
            log?("\(RemoteURL.displayed(miss.url)): not in remote \(identity)")
        case .failure(let failure) where failure.isObjectTooLarge:
            let limit = settings.maximumBytes != nil ? "--max-size allows" : "512 MiB, the largest object read"
            log?("\(RemoteURL.displayed(miss.url)): remote \(identity) has it, but larger than \(limit); fetched from the origin")
        case .failure(let failure):
            tier.giveUp(store, failure, now: WallClock.now())
        }
        if let next = tier.readable(after: store) {
            askRemote(next, slot: slot, &run)
            return
        }
        do throws(FetchError) {
            try submitOrigin(slot, &run)
        } catch {
            try finish(.failure(error))
        }
    }

    /// A remote store answered a write.
    func remoteWritten(_ store: Int, _ result: Result<Bool, RemoteFailure>, seconds: Double, _ run: inout FetchRun) {
        run.pendingWrites = max(0, run.pendingWrites - 1)
        if run.interrupted {
            switch result {
            case .success: run.writesAfterInterruption.written += 1
            case .failure(let failure) where failure.cause == .cancelled: run.writesAfterInterruption.notStarted += 1
            case .failure: run.writesAfterInterruption.failed += 1
            }
            // A write that did not land is the run's error, whoever's fault: remote_errors 0 means every write landed.
            // (Once the grace period is over, the writes still out were counted as they were dropped.)
            if case .failure = result, !run.writesDropped { remoteTier?.statistics.errors += 1 }
            // Waited for after the interruption: said once they all ended, and how.
            if run.awaitingWrites, run.pendingWrites == 0 {
                let counts = run.writesAfterInterruption
                warn?("interrupted: the remote writes under way finished: \(counts.written) written"
                      + (counts.failed > 0 ? ", \(counts.failed) failed" : "")
                      + (counts.notStarted > 0 ? "; \(counts.notStarted) queued not started" : ""), nil)
                run.awaitingWrites = false
            }
        }
        guard let tier = remoteTier else { return }
        switch result {
        case .success(true):
            tier.statistics.writes += 1
            log?("remote \(tier.identity(of: store)): object written")
            tier.timeWrite(by: store, seconds: seconds)
        case .success(false):
            log?("remote \(tier.identity(of: store)): object already there, kept")
            tier.timeWrite(by: store, seconds: seconds)
        case .failure(let failure):
            // Writes cut short by an interruption are no fault of the store.
            guard !run.interrupted else { return }
            switch failure.cause {
            case .httpStatus(401)?, .httpStatus(403)?, .httpStatus(405)?: tier.refuseWrites(store, failure)
            default: tier.giveUp(store, failure, now: WallClock.now())
            }
        }
    }

    /// Writes a new entry's bytes to every remote store in use that takes writes.
    func share(_ stored: EntryCommitter.Body, of key: CacheKey, as fetched: FetchResult, _ run: inout FetchRun) {
        // An original not kept here (--no-original) is shared all the same: the other machines may want
        // other sizes of it. One only held in memory (CacheMemoryOnly) is not written anywhere.
        guard let tier = remoteTier, fetched.isStored || !settings.keepsOriginal, !settings.options.contains(.cacheMemoryOnly),
              tier.takesWrites else { return }
        // An image too large for an object is only kept locally.
        guard fetched.metadata.byteCount < Int64(RemoteObject.maximumLength - 4096) else { return }
        // A stopped run starts no new work: an image stored after the signal (its download had ended)
        // is a write not started, as are those the signal found queued.
        guard !run.interrupted else {
            run.writesAfterInterruption.notStarted += tier.writeTargets
            return
        }
        let bytes: [UInt8]
        switch stored {
        case .bytes(let read): bytes = read
        case .file(let path), .copy(let path):
            // A body checked from its head and tail is read now, only for the remote stores.
            guard let read = try? FileSystem.readFile(path, limit: RemoteObject.maximumLength) else { return }
            bytes = read
        }
        let metadata = fetched.metadata
        let object: [UInt8]
        do {
            var remoteObject = RemoteObject(bytes: bytes, contentType: metadata.contentType, url: fetched.url, etag: metadata.etag,
                                            lastModified: metadata.lastModified, storedAt: metadata.storedAt)
            remoteObject.optedOut = metadata.optedOut
            object = try remoteObject.encoded()
        } catch {
            tier.statistics.errors += 1
            warn?("cannot write to the remote stores: \(error)", nil)
            return
        }
        let messages = self.messages
        // Replaced when the stores were not asked first (a refresh, --no-cache-read: theirs may be the old
        // bytes); after they answered a miss, the first writer's stays (another machine's, the same image).
        let unasked = fetched.cacheType == .refreshed || !settings.options.isDisjoint(with: [.fromLoaderOnly, .refreshCached])
        run.pendingWrites += tier.put(object, as: key, replacing: unasked) { store, result, seconds in
            messages.push(.remoteWritten(store: store, result, seconds: seconds))
        }
    }

    /// With --remote-reshare, a local hit is written to the remote stores too.
    func reshare(_ hit: FetchResult, key: CacheKey, _ run: inout FetchRun) {
        guard (try? startDownloader()) != nil else { return }
        share(.file(hit.path), of: key, as: hit, &run)
    }
}
