/// Splits CSV (RFC 4180) or TSV bytes into records of fields, as they arrive:
/// a field in double quotes may hold the delimiter, line breaks and doubled
/// quotes; CRLF and LF both end a record; blank lines are skipped. A record
/// that breaks the rules (a quote in an unquoted field, text after a closing
/// quote, a quote never closed, longer than the limit) comes out with why,
/// and reading goes on at the next line, so memory stays bounded.
struct DelimitedSplitter {
    struct Record: Equatable {
        var fields: [[UInt8]]
        /// The line the record starts on (1-based).
        var line: Int
        /// Why the record is not taken, if it breaks the rules.
        var problem: String?
    }

    private enum State {
        case fieldStart, unquoted, quoted, quoteInQuoted
        /// After a broken record: everything up to the next line break is dropped.
        case skipping
    }

    let delimiter: UInt8
    /// The most bytes one record may hold.
    let maximumLength: Int

    private var state = State.fieldStart
    private var fields: [[UInt8]] = []
    private var field: [UInt8] = []
    private var length = 0
    private var line = 1
    private var recordLine = 1
    private var problem: String?
    private var records: [Record] = []

    /// Whether a quote inside a field that does not start with one is kept as text (TSV, whose
    /// captions hold quotes and whose writers rarely quote), rather than refused (CSV, RFC 4180).
    let keepsQuotesInFields: Bool

    init(delimiter: UInt8, maximumLength: Int, keepsQuotesInFields: Bool = false) {
        self.delimiter = delimiter
        self.maximumLength = maximumLength
        self.keepsQuotesInFields = keepsQuotesInFields
    }

    mutating func push(_ bytes: ArraySlice<UInt8>) -> [Record] {
        for byte in bytes { take(byte) }
        defer { records.removeAll(keepingCapacity: true) }
        return records
    }

    /// The last record, once the input ended.
    mutating func finish() -> [Record] {
        switch state {
        case .quoted:
            fail("a quote opened on line \(recordLine) is never closed")
            endRecord()
        case .skipping:
            endRecord()
        default:
            if !fields.isEmpty || !field.isEmpty { endField(); endRecord() }
        }
        defer { records.removeAll() }
        return records
    }

    private mutating func take(_ byte: UInt8) {
        if byte == 0x0A { line += 1 }
        length += 1
        if length > maximumLength, state != .skipping {
            fail("a row longer than \(maximumLength / 1024) KiB" + (state == .quoted ? " (a quote not closed?)" : ""))
        }
        switch state {
        case .skipping:
            if byte == 0x0A { endRecord() }
        case .fieldStart:
            switch byte {
            case UInt8(ascii: "\""): state = .quoted
            case delimiter: endField()
            case 0x0A: endField(); endRecord()
            case 0x0D: break
            default: field.append(byte); state = .unquoted
            }
        case .unquoted:
            switch byte {
            case delimiter: endField()
            case 0x0A: endField(); endRecord()
            case 0x0D: break
            case UInt8(ascii: "\"") where !keepsQuotesInFields: fail("a quote inside a field that does not start with one")
            default: field.append(byte)
            }
        case .quoted:
            if byte == UInt8(ascii: "\"") { state = .quoteInQuoted } else { field.append(byte) }
        case .quoteInQuoted:
            switch byte {
            case UInt8(ascii: "\""): field.append(byte); state = .quoted
            case delimiter: endField()
            case 0x0A: endField(); endRecord()
            case 0x0D: break
            default: fail("text after a closing quote")
            }
        }
    }

    private mutating func endField() {
        fields.append(field)
        field.removeAll(keepingCapacity: true)
        state = .fieldStart
    }

    private mutating func fail(_ reason: String) {
        problem = problem ?? reason
        fields.removeAll()
        field.removeAll()
        state = .skipping
    }

    private mutating func endRecord() {
        // A blank line is no record.
        let blank = problem == nil && fields.count <= 1 && (fields.first?.isEmpty ?? true)
        if !blank { records.append(Record(fields: fields, line: recordLine, problem: problem)) }
        fields.removeAll()
        field.removeAll()
        problem = nil
        length = 0
        state = .fieldStart
        // The next record starts on the line this one's break ended.
        recordLine = line
    }
}
