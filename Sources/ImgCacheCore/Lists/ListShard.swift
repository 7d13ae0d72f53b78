/// `--shard I/N`: the part of a list one machine of N takes. An entry belongs
/// to part `md5(key) mod N` (the key's digest's first 64 bits), so the split
/// is the same on every machine, in every order of the list, and a URL given
/// twice lands in the same part.
public struct ListShard: Equatable, Sendable {
    /// This machine's part, from 0.
    public let index: Int
    public let count: Int

    /// `I/N` with 0 ≤ I < N (`$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT`, a
    /// Kubernetes Indexed Job's `$JOB_COMPLETION_INDEX/N`).
    public init(parsing text: String) throws(ValueError) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let index = Int(parts[0]), let count = Int(parts[1]) else {
            throw ValueError("give I/N, this machine's part I (from 0) of N")
        }
        guard count >= 1, count <= 1_000_000 else { throw ValueError("N is from 1 to 1000000") }
        guard index >= 0, index < count else {
            throw ValueError("I is from 0 to \(count - 1) (parts are counted from 0)")
        }
        self.index = index
        self.count = count
    }

    /// Whether a row with no URL to key (a bad row, a URL that does not parse) is this machine's
    /// to report: by its line, so that one part reports it and the others count it elsewhere.
    public func contains(line: Int) -> Bool {
        line % count == index
    }

    /// Whether the entry of `key` is this machine's.
    public func contains(_ key: CacheKey) -> Bool {
        let value = UInt64(key.digest.prefix(16), radix: 16) ?? 0
        return Int(value % UInt64(count)) == index
    }
}
