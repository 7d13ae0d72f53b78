import Foundation
import Testing

/// Docs/JSON.md, read as the contract for `--json` output: each `## ` section
/// names one shape of object, its table the fields, in order, and their types.
enum JSONContract {
    struct Field: Equatable {
        let name: String
        let types: Set<String>
        let nullable: Bool
        /// Written only in some cases (its type ends with ", optional").
        let optional: Bool
    }

    /// Every section's fields, by the section's title.
    static let sections: [String: [Field]] = {
        let text = (try? String(contentsOf: Paths.repository.appendingPathComponent("Docs/JSON.md"), encoding: .utf8)) ?? ""
        var sections: [String: [Field]] = [:]
        var current: String?
        for line in text.split(separator: "\n") {
            if line.hasPrefix("## ") {
                current = String(line.dropFirst(3))
                continue
            }
            guard let section = current, line.hasPrefix("| "), !line.hasPrefix("| field"), !line.hasPrefix("|---") else { continue }
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 2 else { continue }
            var type = cells[1]
            let optional = type.hasSuffix(", optional")
            if optional { type = String(type.dropLast(", optional".count)) }
            let nullable = type.hasSuffix(" or null")
            let base = nullable ? String(type.dropLast(" or null".count)) : type
            sections[section, default: []].append(Field(name: cells[0], types: [base], nullable: nullable, optional: optional))
        }
        return sections
    }()

    /// The JSON type name of a value JSONSerialization produced.
    static func typeName(_ value: Any) -> String {
        if value is NSNull { return "null" }
        if value is String { return "string" }
        if value is [Any] { return "array" }
        if value is [String: Any] { return "object" }
        // JSONSerialization on Linux hands back Swift Bool, Int and Double, or NSNumber.
        switch String(describing: type(of: value)) {
        case "Bool": return "boolean"
        case "Int", "Int64", "UInt64": return "integer"
        case "Double": return "number"
        default: break
        }
        if let number = value as? NSNumber {
            let kind = String(cString: number.objCType)
            if kind == "c" || kind == "B" { return "boolean" }
            return kind == "d" || kind == "f" ? "number" : "integer"
        }
        return "other"
    }

    /// Checks `object` has exactly the fields of `section`, each of its type.
    static func expect(_ object: [String: Any]?, matches section: String, sourceLocation: SourceLocation = #_sourceLocation) {
        guard let fields = sections[section] else {
            Issue.record("Docs/JSON.md has no section '\(section)'", sourceLocation: sourceLocation)
            return
        }
        guard let object else {
            Issue.record("no object for '\(section)'", sourceLocation: sourceLocation)
            return
        }
        let keys = Set(object.keys)
        #expect(keys.isSubset(of: fields.map(\.name)) && Set(fields.filter { !$0.optional }.map(\.name)).isSubset(of: keys),
                "\(section): fields", sourceLocation: sourceLocation)
        for field in fields {
            guard let value = object[field.name] else { continue }
            let type = typeName(value)
            let allowed = type == "null" ? field.nullable : field.types.contains(type) || (type == "integer" && field.types.contains("number"))
            #expect(allowed, "\(section): \(field.name) is \(type)", sourceLocation: sourceLocation)
        }
    }
}
