/// How `--output-dir` names each copy: a template of fields in braces
/// (`{stem}-{width}.{hash8}.{ext}`, the default), so that a name changes when
/// the bytes do (cache busting) and two images never share one.
public struct CopyNameTemplate: Equatable, Sendable, CustomStringConvertible {
    /// What a template may hold in braces.
    public enum Field: String, CaseIterable, Sendable {
        /// The URL's file name without its extension, `%XX` decoded (`my photo` for `my%20photo.jpg`).
        case stem
        /// The extension of the copy's format (`jpg`, `webp`).
        case ext
        /// The copy's width and height in pixels, as shown.
        case width, height
        /// The copy's format (`jpeg`, `webp`).
        case format
        /// The SHA-256 of the copy's bytes, in hex: all 64 digits, or the first 8.
        case hash, hash8
        /// The first 8 hex digits of the URL's digest: apart for every URL, the same for its every size and format.
        case urlhash8
    }

    private enum Part: Equatable, Sendable {
        case literal(String)
        case field(Field)
    }

    public let description: String
    private let parts: [Part]

    /// The default: a name that tells the image, its size and its bytes apart.
    public static let standard = try! CopyNameTemplate(parsing: "{stem}-{width}.{hash8}.{ext}")

    /// Reads a template; it names a file in the folder or below it (no absolute path, no `..`).
    public init(parsing text: String) throws(ValueError) {
        var parts: [Part] = []
        var rest = text[...]
        while let open = rest.firstIndex(of: "{") {
            if open > rest.startIndex { parts.append(.literal(String(rest[..<open]))) }
            guard let close = rest[open...].firstIndex(of: "}") else { throw ValueError("a '{' is not closed") }
            let name = rest[rest.index(after: open)..<close]
            guard let field = Field(rawValue: String(name)) else {
                throw ValueError("no field {\(name)}; the fields are " + Field.allCases.map { "{\($0.rawValue)}" }.joined(separator: ", "))
            }
            parts.append(.field(field))
            rest = rest[rest.index(after: close)...]
        }
        if !rest.isEmpty { parts.append(.literal(String(rest))) }
        guard !text.contains("}") || parts.contains(where: { if case .field = $0 { return true }; return false }) else {
            throw ValueError("a '}' is not opened")
        }
        for case .literal(let literal) in parts where literal.contains("}") { throw ValueError("a '}' is not opened") }
        guard !parts.isEmpty else { throw ValueError("the template is empty") }
        // The extension says what the bytes are (servers send the type it names): always the copy's own.
        guard parts.last == .field(.ext) else { throw ValueError("it must end with {ext}, the extension of the copy's format") }
        guard !text.hasPrefix("/"), !text.split(separator: "/", omittingEmptySubsequences: false).contains(where: { $0 == ".." || $0.isEmpty }),
              !text.contains("\0") else {
            throw ValueError("a name inside the folder is needed: no leading '/', empty part or '..'")
        }
        description = text
        self.parts = parts
    }

    /// Whether names hold the copy's hash: then two different images never get one name.
    public var namesContent: Bool { parts.contains { $0 == .field(.hash) || $0 == .field(.hash8) } }

    /// What the fields of one copy are.
    public struct Values: Sendable {
        public var stem: String
        public var format: ImageFormat
        public var width: Int
        public var height: Int
        /// The SHA-256 of the bytes in hex (empty when the template does not use it).
        public var hash: String
        public var urlHash: String

        public init(stem: String, format: ImageFormat, width: Int, height: Int, hash: String, urlHash: String) {
            self.stem = stem
            self.format = format
            self.width = width
            self.height = height
            self.hash = hash
            self.urlHash = urlHash
        }
    }

    /// The name of one copy (maybe with folders in it).
    public func name(_ values: Values) -> String {
        parts.map { part in
            switch part {
            case .literal(let text): return text
            case .field(.stem): return values.stem
            case .field(.ext): return values.format.fileExtension
            case .field(.width): return String(values.width)
            case .field(.height): return String(values.height)
            case .field(.format): return values.format.rawValue
            case .field(.hash): return values.hash
            case .field(.hash8): return String(values.hash.prefix(8))
            case .field(.urlhash8): return values.urlHash
            }
        }.joined()
    }

    /// Whether `name` (a path under the folder) is one this template could have made: each literal
    /// as written; `{stem}` any text without '/'; `{width}` and `{height}` digits; `{ext}` and
    /// `{format}` a format imgcache writes; `{hash}` 64 and `{hash8}`/`{urlhash8}` 8 lower-case hex
    /// digits. What `--prune` may remove: nothing else.
    public func couldHaveMade(_ name: String) -> Bool {
        CopyNameTemplate.matches(Array(name.utf8)[...], parts[...])
    }

    private static func matches(_ name: ArraySlice<UInt8>, _ parts: ArraySlice<Part>) -> Bool {
        guard let part = parts.first else { return name.isEmpty }
        let rest = parts.dropFirst()
        switch part {
        case .literal(let text):
            let bytes = Array(text.utf8)
            return name.starts(with: bytes) && matches(name.dropFirst(bytes.count), rest)
        case .field(.hash), .field(.hash8), .field(.urlhash8):
            let count = part == .field(.hash) ? 64 : 8
            guard name.count >= count, name.prefix(count).allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else { return false }
            return matches(name.dropFirst(count), rest)
        case .field(.width), .field(.height):
            var length = 0
            while length < name.count, (0x30...0x39).contains(name[name.startIndex + length]) { length += 1 }
            return (1...max(1, length)).contains { length > 0 && matches(name.dropFirst($0), rest) }
        case .field(.ext), .field(.format):
            // Any stored format's: an SVG, BMP, TIFF or ICO is copied as it is, not written.
            return CodecRegistry.storedFormats.contains { format in
                let word = Array((part == .field(.ext) ? format.fileExtension : format.rawValue).utf8)
                return name.starts(with: word) && matches(name.dropFirst(word.count), rest)
            }
        case .field(.stem):
            // Any text without '/', tried from the longest (bounded by the name's length).
            var end = name.firstIndex(of: 0x2F) ?? name.endIndex
            while end > name.startIndex {
                if matches(name[end...], rest) { return true }
                end -= 1
            }
            return false
        }
    }
}
