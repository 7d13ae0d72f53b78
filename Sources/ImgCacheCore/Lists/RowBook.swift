import Synchronization

/// The other columns of a table's rows, from the list reader (which puts each
/// row in before its URL is handed on) to whoever prints the answers (who takes
/// it out with the answer's index). At most the read-ahead window's rows are in it.
public final class RowBook: Sendable {
    private let rows = Mutex<[Int: JSONObject]>([:])

    /// Keeps `row` for the answer at `index`.
    func deposit(_ row: JSONObject, at index: Int) {
        rows.withLock { $0[index] = row }
    }

    /// The row of the answer at `index`, if it has one; it is then forgotten.
    public func take(_ index: Int) -> JSONObject? {
        rows.withLock { $0.removeValue(forKey: index) }
    }
}
