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
}
