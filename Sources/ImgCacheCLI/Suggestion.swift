/// Finds the word a user probably meant, for "did you mean" hints.
public enum Suggestion {
    /// What other tools call imgcache's commands (ccache -s is statistics,
    /// `ls` and `rm` are habits): taken for the command meant.
    static let commandSynonyms = [
        "stats": "cache-info", "statistics": "cache-info", "info": "cache-info", "status": "cache-info",
        "ls": "list", "rm": "remove", "delete": "remove", "purge": "clear", "get": "fetch", "download": "fetch",
        "warm": "prefetch", "gc": "clean", "prune": "clean", "evict": "clean",
    ]

    /// The command `word` probably means: a close spelling, or the one another tool's word stands for.
    public static func command(for word: String) -> String? {
        commandSynonyms[word.lowercased()] ?? closest(to: word, among: CommandTable.commands.map(\.name))
    }

    /// The candidate closest to `input` by edit distance (a swap of two
    /// neighbouring letters counts as one edit), if close enough to be a typo;
    /// else, of the candidates that begin as `input` does (all of it, or all
    /// but its last letter: `retry` for `retries`), the closest one.
    public static func closest(to input: String, among candidates: [String]) -> String? {
        let scored = candidates.map { ($0, distance(input, $0)) }
        if let best = scored.min(by: { $0.1 < $1.1 }) {
            let allowed = max(1, min(2, best.0.count / 3))
            if best.1 <= allowed { return best.0 }
        }
        guard input.count >= 2 else { return nil }
        let stem = max(2, input.count - 1)
        let extended = scored.filter { candidate, _ in
            zip(input, candidate).prefix { $0 == $1 }.count >= stem
        }
        guard let nearest = extended.min(by: { $0.1 < $1.1 }) else { return nil }
        // Two equally near: no guess.
        return extended.filter { $0.1 == nearest.1 }.count == 1 ? nearest.0 : nil
    }

    /// Optimal string alignment distance between `a` and `b`.
    public static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1)
                }
            }
        }
        return table[a.count][b.count]
    }
}
