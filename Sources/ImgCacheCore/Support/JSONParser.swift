/// Reads one JSON text (RFC 8259) into a `JSONValue`: the rows of a JSONL
/// list. Strict: no comments, trailing commas or bare words; nesting is
/// limited so that a hostile line cannot exhaust the stack.
public struct JSONParser {
    /// Why a text is not JSON, and at which byte.
    public struct Failure: Error, Equatable, Sendable, CustomStringConvertible {
        public let reason: String
        public let offset: Int
        public var description: String { "\(reason) at byte \(offset + 1)" }
    }

    /// The deepest nesting of arrays and objects taken.
    static let maximumDepth = 64

    private let bytes: [UInt8]
    private var position = 0

    private init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The value `bytes` hold, surrounding white space allowed.
    public static func parse(_ bytes: [UInt8]) throws(Failure) -> JSONValue {
        var parser = JSONParser(bytes)
        parser.skipSpace()
        let value = try parser.value(depth: 0)
        parser.skipSpace()
        guard parser.position == bytes.count else { throw parser.failure("text after the value") }
        return value
    }

    private func failure(_ reason: String) -> Failure { Failure(reason: reason, offset: position) }

    private var current: UInt8? { position < bytes.count ? bytes[position] : nil }

    private mutating func skipSpace() {
        while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { position += 1 }
    }

    private mutating func expect(_ byte: UInt8, _ what: String) throws(Failure) {
        guard current == byte else { throw failure("expected \(what)") }
        position += 1
    }

    private mutating func value(depth: Int) throws(Failure) -> JSONValue {
        guard let byte = current else { throw failure("unexpected end") }
        switch byte {
        case UInt8(ascii: "{"):
            guard depth < JSONParser.maximumDepth else { throw failure("nested too deep") }
            return .object(try object(depth: depth + 1))
        case UInt8(ascii: "["):
            guard depth < JSONParser.maximumDepth else { throw failure("nested too deep") }
            return .array(try array(depth: depth + 1))
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try word("true"); return .bool(true)
        case UInt8(ascii: "f"): try word("false"); return .bool(false)
        case UInt8(ascii: "n"): try word("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw failure("unexpected character")
        }
    }

    private mutating func word(_ text: String) throws(Failure) {
        let expected = Array(text.utf8)
        guard bytes.count - position >= expected.count, bytes[position..<position + expected.count].elementsEqual(expected) else {
            throw failure("unexpected word")
        }
        position += expected.count
    }

    private mutating func object(depth: Int) throws(Failure) -> JSONObject {
        position += 1
        var object = JSONObject()
        skipSpace()
        if current == UInt8(ascii: "}") {
            position += 1
            return object
        }
        while true {
            skipSpace()
            guard current == UInt8(ascii: "\"") else { throw failure("expected a member name") }
            let name = try string()
            skipSpace()
            try expect(UInt8(ascii: ":"), "':'")
            skipSpace()
            object.add(name, try value(depth: depth))
            skipSpace()
            if current == UInt8(ascii: ",") {
                position += 1
                continue
            }
            try expect(UInt8(ascii: "}"), "',' or '}'")
            return object
        }
    }

    private mutating func array(depth: Int) throws(Failure) -> [JSONValue] {
        position += 1
        var values: [JSONValue] = []
        skipSpace()
        if current == UInt8(ascii: "]") {
            position += 1
            return values
        }
        while true {
            skipSpace()
            values.append(try value(depth: depth))
            skipSpace()
            if current == UInt8(ascii: ",") {
                position += 1
                continue
            }
            try expect(UInt8(ascii: "]"), "',' or ']'")
            return values
        }
    }

    private mutating func string() throws(Failure) -> String {
        position += 1
        var scalars = String.UnicodeScalarView()
        var start = position
        func flush(_ end: Int) throws(Failure) {
            guard start < end else { return }
            guard let text = String(validating: bytes[start..<end], as: UTF8.self) else { throw failure("not UTF-8") }
            scalars.append(contentsOf: text.unicodeScalars)
        }
        while true {
            guard let byte = current else { throw failure("string not closed") }
            switch byte {
            case UInt8(ascii: "\""):
                try flush(position)
                position += 1
                return String(scalars)
            case UInt8(ascii: "\\"):
                try flush(position)
                position += 1
                scalars.append(try escape())
                start = position
            case 0..<0x20:
                throw failure("control character in a string")
            default:
                position += 1
            }
        }
    }

    private mutating func escape() throws(Failure) -> Unicode.Scalar {
        guard let byte = current else { throw failure("string not closed") }
        position += 1
        switch byte {
        case UInt8(ascii: "\""): return "\""
        case UInt8(ascii: "\\"): return "\\"
        case UInt8(ascii: "/"): return "/"
        case UInt8(ascii: "b"): return "\u{08}"
        case UInt8(ascii: "f"): return "\u{0C}"
        case UInt8(ascii: "n"): return "\n"
        case UInt8(ascii: "r"): return "\r"
        case UInt8(ascii: "t"): return "\t"
        case UInt8(ascii: "u"):
            let high = try hex4()
            if (0xD800..<0xDC00).contains(high) {
                // A surrogate pair: the low half must follow as another \u escape.
                guard current == UInt8(ascii: "\\"), position + 1 < bytes.count, bytes[position + 1] == UInt8(ascii: "u") else {
                    throw failure("lone surrogate")
                }
                position += 2
                let low = try hex4()
                guard (0xDC00..<0xE000).contains(low),
                      let scalar = Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)) else { throw failure("lone surrogate") }
                return scalar
            }
            guard let scalar = Unicode.Scalar(high) else { throw failure("lone surrogate") }
            return scalar
        default:
            throw failure("bad escape")
        }
    }

    private mutating func hex4() throws(Failure) -> UInt32 {
        guard bytes.count - position >= 4 else { throw failure("bad \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw failure("bad \\u escape")
            }
            value = value << 4 | UInt32(digit)
            position += 1
        }
        return value
    }

    private mutating func number() throws(Failure) -> JSONValue {
        let start = position
        var integral = true
        if current == UInt8(ascii: "-") { position += 1 }
        guard let first = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { throw failure("bad number") }
        if first == UInt8(ascii: "0") {
            position += 1
        } else {
            while let byte = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { position += 1 }
        }
        if current == UInt8(ascii: ".") {
            integral = false
            position += 1
            guard let byte = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { throw failure("bad number") }
            while let byte = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { position += 1 }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            integral = false
            position += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { position += 1 }
            guard let byte = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { throw failure("bad number") }
            while let byte = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { position += 1 }
        }
        let text = String(decoding: bytes[start..<position], as: UTF8.self)
        // `-0` is no integer's text: kept as written.
        if integral, text != "-0", let value = Int64(text) { return .integer(value) }
        // Kept as written unless a Double writes it back the same.
        guard let value = Double(text), value.isFinite, String(value) == text else { return .numberText(text) }
        return .number(value)
    }
}
