/// Why a value written by a person (a size, a duration, a header, a remote
/// store's URL) was not understood: one sentence, for the CLI to put after
/// the option it came from.
public struct ValueError: Error, Equatable, Sendable, CustomStringConvertible {
    public let reason: String

    public init(_ reason: String) {
        self.reason = reason
    }

    /// `throw .invalid("...")`, as the parsers write it.
    public static func invalid(_ reason: String) -> ValueError { ValueError(reason) }

    public var description: String { reason }
}
