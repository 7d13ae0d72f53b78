/// A validated namespace name: one folder under the cache root.
public struct Namespace: Equatable, Hashable, Sendable, CustomStringConvertible {
    public let name: String

    /// The namespace used when none is given.
    public static let `default` = Namespace(unchecked: "default")
    /// Longest accepted name.
    public static let maximumLength = 64

    /// Why a namespace name was refused.
    public enum ValidationError: Error, Equatable, Sendable, CustomStringConvertible {
        case empty
        case tooLong(Int)
        case leadingDot
        case leadingDash
        case invalidCharacter(Character)

        public var description: String {
            switch self {
            case .empty: return "a namespace name cannot be empty"
            case .tooLong(let count): return "a namespace name is at most \(Namespace.maximumLength) characters (this one has \(count))"
            case .leadingDot: return "a namespace name cannot start with '.'"
            case .leadingDash: return "a namespace name cannot start with '-'"
            case .invalidCharacter(let character):
                let shown = character.isASCII && !(character.asciiValue! < 0x20) ? "'\(character)'" : "U+" + String(character.unicodeScalars.first!.value, radix: 16, uppercase: true)
                return "a namespace name may use only letters, digits, '.', '_' and '-' (not \(shown))"
            }
        }
    }

    /// Accepts 1–64 ASCII letters, digits, `.`, `_`, `-`, not starting with `.` or `-`,
    /// so that a name is always a single plain folder and never a path.
    public init(validating name: String) throws(ValidationError) {
        guard let first = name.first else { throw .empty }
        guard name.count <= Namespace.maximumLength else { throw .tooLong(name.count) }
        if first == "." { throw .leadingDot }
        if first == "-" { throw .leadingDash }
        if let bad = name.first(where: { !($0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "_" || $0 == "-")) }) {
            throw .invalidCharacter(bad)
        }
        self.name = name
    }

    private init(unchecked name: String) { self.name = name }

    public var description: String { name }
}
