/// One request header given with `-H 'Name: value'`.
///
/// As in curl, `Name:` with nothing after the colon removes a header imgcache
/// would otherwise send (`-H 'Accept:'`).
public struct HTTPHeader: Equatable, Hashable, Sendable {
    public let name: String
    public let value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    public init(parsing line: String) throws(ValueError) {
        guard let colon = line.firstIndex(of: ":") else { throw .invalid("expected 'Name: value'") }
        let name = line[..<colon]
        guard !name.isEmpty else { throw .invalid("the header name is empty") }
        guard name.utf8.allSatisfy(HTTPHeader.isTokenByte) else {
            throw .invalid("the header name may hold only letters, digits and !#$%&'*+-.^_`|~")
        }
        let value = line[line.index(after: colon)...].trimmingSpaces
        // A CR or LF would let the value start a header (or a request) of its own.
        guard !value.utf8.contains(where: { $0 == 13 || $0 == 10 || $0 == 0 }) else {
            throw .invalid("the value contains a line break or NUL")
        }
        self.name = String(name)
        self.value = String(value)
    }

    /// Whether this line removes the header rather than sets it.
    public var removes: Bool { value.isEmpty }

    /// The line as libcurl takes it: `Name: value`, or `Name:` to remove.
    var line: String { removes ? name + ":" : name + ": " + value }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}
