/// The entities an SVG document declares, measured before it is parsed: a
/// reference to an outside entity is refused, and so is a document that would
/// grow past a limit once its entities are expanded ("a billion laughs").
enum SVGEntities {
    /// The most declarations a document may make.
    static let maximumDeclarations = 1000

    /// What a document declares: each internal entity's value (where it lies in the document; the
    /// first declaration of a name counts, as in XML), or why the declarations are refused.
    struct Declarations {
        var values: [String: Range<Int>] = [:]
        var problem: String?
    }

    static func declarations(in markup: SVGMarkup) -> Declarations {
        var found = Declarations()
        var index = 0
        var count = 0
        let close = UInt8(ascii: ">")
        while let start = markup.find("<!ENTITY", from: index) {
            index = start + 8
            let end = markup.find(byte: close, from: index) ?? markup.count
            let tokens = markup.bytes[index..<end].split(whereSeparator: SVGMarkup.isSpace).prefix(2)
                .map { String(decoding: $0, as: UTF8.self) }
            guard let name = tokens.first else {
                found.problem = "an entity without a name"
                return found
            }
            let kind = tokens.dropFirst().first
            if name.hasPrefix("%") {
                found.problem = "it declares an outside or parameter entity (\(kind ?? name))"
                return found
            }
            if kind == "SYSTEM" || kind == "PUBLIC" || kind == "%" {
                found.problem = "it declares an outside or parameter entity (\(name))"
                return found
            }
            guard let open = markup.bytes[index..<end].firstIndex(where: { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "'") }) else {
                found.problem = "entity \(name) has no value"
                return found
            }
            let valueEnd = markup.find(byte: markup.bytes[open], from: open + 1, before: end) ?? end
            if found.values[name] == nil { found.values[name] = (open + 1)..<valueEnd }
            count += 1
            if count > maximumDeclarations {
                found.problem = "it declares more than \(maximumDeclarations) entities"
                return found
            }
        }
        return found
    }

    /// Why the document's entities are refused, nil when they are not.
    static func problem(in markup: SVGMarkup, limit: Int) -> String? {
        guard markup.find("<!ENTITY", from: 0) != nil else { return nil }
        let declared = declarations(in: markup)
        if let problem = declared.problem { return problem }
        // The size each entity expands to, references followed to a bounded depth.
        var sizes: [String: Int] = [:]
        func size(_ name: String, depth: Int) -> Int {
            if let known = sizes[name] { return known }
            guard depth < 16, let value = declared.values[name] else { return depth < 16 ? name.utf8.count + 2 : Int.max / 4 }
            var total = 0
            for reference in references(in: markup, value) {
                total = min(Int.max / 4, total + size(reference, depth: depth + 1))
            }
            total = min(Int.max / 4, total + value.count)
            sizes[name] = total
            return total
        }
        var total = markup.count
        let body = markup.find("]>", from: 0).map { $0 + 2 } ?? 0
        for reference in references(in: markup, body..<markup.count) {
            total = min(Int.max / 4, total + size(reference, depth: 0))
            if total > limit { return "its entities expand past \(limit / (1 << 20)) MiB" }
        }
        return nil
    }

    /// The names of `&name;` references in `range` (character references left out).
    static func references(in markup: SVGMarkup, _ range: Range<Int>) -> [String] {
        var names: [String] = []
        var index = range.lowerBound
        while let amp = markup.find(byte: UInt8(ascii: "&"), from: index, before: range.upperBound) {
            var end = amp + 1
            while end < range.upperBound, end - amp <= 128 {
                let byte = markup.bytes[end]
                if byte == UInt8(ascii: ";") || byte == UInt8(ascii: "&") || byte == UInt8(ascii: "<") || SVGMarkup.isSpace(byte) { break }
                end += 1
            }
            index = amp + 1
            let length = end - amp - 1
            guard length < 128, end < range.upperBound, markup.bytes[end] == UInt8(ascii: ";"),
                  length == 0 || markup.bytes[amp + 1] != UInt8(ascii: "#") else { continue }
            names.append(markup.text((amp + 1)..<end))
            if names.count > 1 << 20 { break }
        }
        return names
    }
}
