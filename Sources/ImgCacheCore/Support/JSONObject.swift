/// A JSON value for imgcache's machine-readable output. Written by hand so that
/// `--json` costs nothing at start-up and keeps fields in a stable order.
public enum JSONValue: Equatable, Sendable {
    case string(String)
    case integer(Int64)
    case number(Double)
    /// A number kept as its JSON text, where no Int64 or Double gives it back as written (an integer
    /// past 2^63, `1e400`, `1e5`): a row's column goes on as its table wrote it.
    case numberText(String)
    case bool(Bool)
    case null
    case object(JSONObject)
    case array([JSONValue])

    /// The value as compact JSON text.
    public var serialized: String {
        switch self {
        case .string(let text): return JSONValue.quote(text)
        case .integer(let value): return String(value)
        case .number(let value): return value.isFinite ? String(value) : "null"
        case .numberText(let text): return text
        case .bool(let value): return value ? "true" : "false"
        case .null: return "null"
        case .object(let object): return object.serialized
        case .array(let values): return "[" + values.map(\.serialized).joined(separator: ",") + "]"
        }
    }

    /// `text` as a JSON string literal, escaping quotes, backslashes and control characters.
    public static func quote(_ text: String) -> String {
        var out = "\""
        out.reserveCapacity(text.utf8.count + 2)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

/// An ordered JSON object: fields come out in the order they were added.
public struct JSONObject: Equatable, Sendable {
    public private(set) var fields: [(String, JSONValue)] = []

    public init() {}

    /// Appends a field; a nil value is written as JSON `null`.
    public mutating func add(_ name: String, _ value: JSONValue?) {
        fields.append((name, value ?? .null))
    }

    /// Sets a field: a name already there gets the new value in its place (the last of
    /// duplicate keys wins, as JSON parsers read them); a new name is appended.
    public mutating func set(_ name: String, _ value: JSONValue) {
        if let index = fields.firstIndex(where: { $0.0 == name }) { fields[index].1 = value } else { fields.append((name, value)) }
    }

    public mutating func add(_ name: String, _ text: String?) { add(name, text.map(JSONValue.string)) }
    public mutating func add(_ name: String, _ number: Int?) { add(name, number.map { .integer(Int64($0)) }) }
    public mutating func add(_ name: String, _ number: Int64?) { add(name, number.map(JSONValue.integer)) }
    public mutating func add(_ name: String, _ flag: Bool) { add(name, JSONValue.bool(flag)) }

    /// This object with a table row's other columns as its last field, `row` (unchanged without one).
    public func with(row: JSONObject?) -> JSONObject {
        guard let row, !row.fields.isEmpty else { return self }
        var object = self
        object.add("row", .object(row))
        return object
    }

    /// The object as one line of compact JSON.
    public var serialized: String {
        "{" + fields.map { JSONValue.quote($0.0) + ":" + $0.1.serialized }.joined(separator: ",") + "}"
    }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.fields.elementsEqual(rhs.fields) { $0.0 == $1.0 && $0.1 == $1.1 }
    }
}
