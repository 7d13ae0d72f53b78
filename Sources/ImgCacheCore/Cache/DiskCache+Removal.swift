/// `imgcache remove URL`: an entry found by its key, as a fetch finds it,
/// and the thumbnails and shrunk copies made from the same key.
extension DiskCache {
    /// A file `remove` took away (or would, with a dry run).
    public struct RemovedFile: Sendable {
        public let path: String
        public let bytes: Int64
        /// What the variant is (its transformer key, the Accept it was asked with); nil for the image as served.
        public let variant: KeyVariant?
    }

    /// Checks, before removing anything, that the lock lookups and stores wait on can be
    /// taken: a FIFO in its place, or a cache this user cannot write, is said rather than
    /// removed from unlocked. Nothing to check where the namespace does not exist.
    public func prepareForRemoval() throws(SystemError) {
        guard case .some(.some) = try? FileSystem.status(directory) else { return }
        try lock.create()
    }

    /// Removes the entry of `key` under every name it can have, with its
    /// sidecar and its URL log line, holding the shard's exclusive lock; with
    /// `dryRun`, only says what it would remove. A lookup, not a scan: found
    /// even when its URL log line was lost or its metadata is damaged.
    public func removeEntry(for key: CacheKey, variant: KeyVariant? = nil, dryRun: Bool) throws(SystemError) -> [RemovedFile] {
        let shard = shardDirectory(for: key)
        return try lock.withShard(key.shardIndex, .exclusive) { () throws(SystemError) -> [RemovedFile] in
            var removed: [RemovedFile] = []
            for name in key.candidateFileNames {
                let path = shard + "/" + name
                guard let status = try FileSystem.status(path), status.isRegularFile else { continue }
                if !dryRun { try FileSystem.remove(path) }
                removed.append(RemovedFile(path: path, bytes: status.size, variant: variant))
            }
            if !dryRun, !removed.isEmpty {
                try FileSystem.remove(sidecarPath(for: key))
                try URLLog.dropLines(of: [key.digest], shardPath: shard)
            }
            return removed
        }
    }

    /// The keys of the thumbnails, shrunk copies and differently asked answers of `key`:
    /// each shard's URL log names them with their
    /// transformer key, and a line counts only when its digest is that of
    /// `key` with the transform, so the entries of another key that logs the
    /// same text (another user's credentials, hidden as `***`) are never taken.
    public func variantKeys(of key: CacheKey) -> [(key: CacheKey, variant: KeyVariant)] {
        var found: [(CacheKey, KeyVariant)] = []
        var seen = Set<String>()
        for shard in 0..<256 {
            let path = directory + "/" + URLLog.shardName(shard) + "/" + URLLog.fileName
            guard let bytes = try? FileSystem.readFile(path, limit: 256 << 20) else { continue }
            // Only a variant's line has a transformer key after its URL: the others are passed over as bytes.
            for line in bytes.split(separator: 0x0A) where line.count > 33 && line.dropFirst(33).contains(0x20) {
                let digest = String(decoding: line.prefix(32), as: UTF8.self)
                let (_, lineKey) = URLLog.split(String(decoding: line.dropFirst(33), as: UTF8.self))
                // Told by the key the line would have: the URL logged may be another spelling of
                // the key's, or another URL a key filter gives the same key (a signature stripped).
                guard !seen.contains(digest), let newline = lineKey.firstIndex(of: "\n") else { continue }
                let transform = String(lineKey[lineKey.index(after: newline)...])
                let variant = CacheKey(key.string + "\n" + transform, fileExtension: nil)
                if variant.digest == digest {
                    seen.insert(digest)
                    found.append((variant, KeyVariant(suffix: Substring(transform))))
                }
            }
        }
        return found
    }
}
