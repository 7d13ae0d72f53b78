/// What became of the rows of one shard, as img2dataset's `NNNNN_stats.json`
/// says it: `count` rows, `successes` exported, `failed_to_download` (not in
/// the cache, or failed when fetched), `failed_to_resize` (its variant or
/// decode failed), and `status_dict`, the rows by reason. A shard's rows are
/// those answered since the shard before it was closed; rows after the last
/// sample count with the last shard. No times: the same list and cache give
/// the same bytes.
struct ShardStatistics {
    var count = 0
    var successes = 0
    var failedToDownload = 0
    var failedToResize = 0
    var filtered = 0
    var optedOut = 0
    var reasons: [String: Int] = [:]

    /// The reasons of failures that happened when the image was decoded or transformed, not fetched.
    static let decodeKinds: Set<String> = ["corrupt_image", "variants_not_made", "not_usable", "decode_memory_limit", "decode_time_limit",
                                           "decoder_crashed", "decoder_sandboxed", "decode_worker_unavailable", "unsupported_format"]

    /// A row answered with `status` (`exported`, `failed`, `missing`, `filtered`, `opted_out`) for `reason`.
    mutating func record(status: String, reason: String) {
        count += 1
        switch status {
        case "exported":
            successes += 1
            reasons["success", default: 0] += 1
            return
        case "filtered": filtered += 1
        case "opted_out": optedOut += 1
        default:
            if ShardStatistics.decodeKinds.contains(reason) { failedToResize += 1 } else { failedToDownload += 1 }
        }
        reasons[reason, default: 0] += 1
    }

    /// The rows of `later` counted here too (the rows after the last shard's samples).
    mutating func absorb(_ later: ShardStatistics) {
        guard later.count > 0 else { return }
        count += later.count
        successes += later.successes
        failedToDownload += later.failedToDownload
        failedToResize += later.failedToResize
        filtered += later.filtered
        optedOut += later.optedOut
        for (reason, number) in later.reasons { reasons[reason, default: 0] += number }
    }

    /// The file's text: img2dataset's fields (those it has and imgcache counts), then imgcache's own.
    func json(shard: Int) -> String {
        var object = JSONObject()
        object.add("count", count)
        object.add("successes", successes)
        object.add("failed_to_download", failedToDownload)
        object.add("failed_to_resize", failedToResize)
        object.add("filtered", filtered)
        object.add("opted_out", optedOut)
        var statuses = JSONObject()
        for (reason, number) in reasons.sorted(by: { $0.key < $1.key }) { statuses.add(reason, number) }
        object.add("status_dict", .object(statuses))
        object.add("shard", shard)
        return object.serialized + "\n"
    }

    /// The name of shard `number`'s statistics.
    static func fileName(_ number: Int) -> String { WebDatasetExport.padded(number, 5) + "_stats.json" }
}
