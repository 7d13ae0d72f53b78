#if canImport(Glibc)
import Glibc
#endif

/// Environment variables as the CLI reads them: the process's, one variable
/// at a time with `getenv` (nothing is built at start-up, which a cache hit
/// pays for), or a given table.
public struct Environment: Sendable {
    private let lookup: @Sendable (String) -> String?

    /// The process's environment.
    public static let process = Environment { name in getenv(name).map { String(cString: $0) } }

    /// A fixed table of variables.
    public init(_ values: [String: String]) {
        lookup = { values[$0] }
    }

    private init(lookup: @escaping @Sendable (String) -> String?) {
        self.lookup = lookup
    }

    /// The variable's value, if it is set.
    public subscript(name: String) -> String? { lookup(name) }

    /// This environment with `name` set to `value`.
    public func setting(_ name: String, to value: String) -> Environment {
        let lookup = self.lookup
        return Environment { $0 == name ? value : lookup($0) }
    }
}
