/// How a list of URLs is written: one URL per line, or a table whose rows each
/// hold a URL in one column (CSV, TSV, JSON Lines). Any of them may be gzipped:
/// that is told from the data's first bytes, not from the name.
public struct ListFormat: Equatable, Sendable {
    public enum Kind: String, CaseIterable, Sendable {
        case lines, csv, tsv, jsonl
    }

    public var kind: Kind
    /// A table's column (JSON member) that holds the URL.
    public var urlColumn: String

    public static let defaultURLColumn = "url"

    public init(kind: Kind = .lines, urlColumn: String = ListFormat.defaultURLColumn) {
        self.kind = kind
        self.urlColumn = urlColumn
    }

    /// The format a file's name says: `.csv`, `.tsv` (or `.tab`), `.jsonl` (or
    /// `.ndjson`), each maybe followed by `.gz`; anything else is lines (a `.gz`
    /// of lines too).
    public static func named(_ path: String, urlColumn: String = ListFormat.defaultURLColumn) -> ListFormat {
        var name = Substring(path.split(separator: "/").last ?? "").lowercased()[...]
        if name.hasSuffix(".gz") { name = name.dropLast(3) }
        let kind: Kind
        switch name.split(separator: ".").last.map(String.init) {
        case "csv": kind = .csv
        case "tsv", "tab": kind = .tsv
        case "jsonl", "ndjson": kind = .jsonl
        default: kind = .lines
        }
        return ListFormat(kind: kind, urlColumn: urlColumn)
    }

    /// What the command line said of a list's format; the rest comes from its name.
    public struct Choice: Equatable, Sendable {
        public var kind: Kind?
        public var urlColumn: String?

        public init(kind: Kind? = nil, urlColumn: String? = nil) {
            self.kind = kind
            self.urlColumn = urlColumn
        }

        /// The format of the list at `path` ("-": standard input, lines unless told).
        public func format(of path: String) -> ListFormat {
            var format = path == "-" ? ListFormat() : ListFormat.named(path)
            if let kind { format.kind = kind }
            // Named without a format: a column makes a list of lines a CSV table.
            if let urlColumn {
                format.urlColumn = urlColumn
                if format.kind == .lines { format.kind = .csv }
            }
            return format
        }
    }

    /// Whether rows carry other columns (every format but lines).
    public var isTable: Bool { kind != .lines }
}
