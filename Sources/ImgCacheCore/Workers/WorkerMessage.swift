/// One message between imgcache and a decode worker: `name value` lines, in
/// order. Values are escaped (`%` and line breaks as `%25`, `%0A`, `%0D`) so
/// that a library's message or a format's name can never start a line of its
/// own. The first field names what the message is (`job`, `phase`, `done`,
/// `crash`).
struct WorkerMessage: Equatable, Sendable {
    private(set) var fields: [(name: String, value: String)] = []

    init(_ kind: String, _ value: String = "") {
        fields = [(kind, value)]
    }

    /// The message's kind: its first field's name.
    var kind: String { fields.first?.name ?? "" }

    mutating func add(_ name: String, _ value: String) {
        fields.append((name, value))
    }

    mutating func add(_ name: String, _ value: Int) {
        fields.append((name, String(value)))
    }

    /// The first value of `name`.
    subscript(name: String) -> String? {
        fields.first { $0.name == name }?.value
    }

    /// The first value of `name` as a whole number.
    func number(_ name: String) -> Int? {
        self[name].flatMap { Int($0) }
    }

    /// Every value of `name`, in order.
    func values(_ name: String) -> [String] {
        fields.filter { $0.name == name }.map(\.value)
    }

    var encoded: [UInt8] {
        var bytes: [UInt8] = []
        for (name, value) in fields {
            bytes += Array(name.utf8)
            bytes.append(UInt8(ascii: " "))
            for byte in value.utf8 {
                switch byte {
                case UInt8(ascii: "%"): bytes += Array("%25".utf8)
                case 0x0A: bytes += Array("%0A".utf8)
                case 0x0D: bytes += Array("%0D".utf8)
                default: bytes.append(byte)
                }
            }
            bytes.append(0x0A)
        }
        return bytes
    }

    /// The message in `bytes`; nil when they are not one (a worker that wrote garbage).
    init?(decoding bytes: ArraySlice<UInt8>) {
        for line in bytes.split(separator: 0x0A) {
            guard let space = line.firstIndex(of: UInt8(ascii: " ")) else { return nil }
            let name = String(decoding: line[..<space], as: UTF8.self)
            var value: [UInt8] = []
            var index = line.index(after: space)
            while index < line.endIndex {
                if line[index] == UInt8(ascii: "%"), index + 2 < line.endIndex,
                   let high = WorkerMessage.hexDigit(line[index + 1]), let low = WorkerMessage.hexDigit(line[index + 2]) {
                    value.append(high << 4 | low)
                    index += 3
                } else {
                    value.append(line[index])
                    index += 1
                }
            }
            fields.append((name, String(decoding: value, as: UTF8.self)))
        }
        guard !fields.isEmpty else { return nil }
    }

    private static func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    static func == (a: WorkerMessage, b: WorkerMessage) -> Bool {
        a.fields.elementsEqual(b.fields) { $0.name == $1.name && $0.value == $1.value }
    }
}
