/// The fields of a value type kept in one shared box: a value that is copied at each step of a
/// lookup's answer (`EntryMetadata`, `FetchResult`) is then copied as one reference, not as some
/// hundreds of bytes and a retain of each string in them. Written only through `unique(_:)`.
///
/// `@unchecked Sendable`: a box is written only when its holder has the one reference to it
/// (`unique(_:)` copies it first otherwise), so a box another thread can see is never written.
final class CopyOnWriteBox<Fields: Equatable>: @unchecked Sendable {
    var fields: Fields

    init(_ fields: Fields) { self.fields = fields }

    /// `box`, made its holder's own first if it is shared.
    static func unique(_ box: inout CopyOnWriteBox<Fields>) -> CopyOnWriteBox<Fields> {
        if !isKnownUniquelyReferenced(&box) { box = CopyOnWriteBox(box.fields) }
        return box
    }

    /// Whether two boxes hold equal fields (the same box, without comparing them).
    static func same(_ lhs: CopyOnWriteBox<Fields>, _ rhs: CopyOnWriteBox<Fields>) -> Bool {
        lhs === rhs || lhs.fields == rhs.fields
    }
}
