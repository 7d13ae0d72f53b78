#if canImport(Glibc)
import Glibc
#endif

/// The compact binary form of an entry's metadata, kept in the image's
/// extended attribute: small enough (about 45 bytes; ext4 keeps at most 64
/// bytes of value in a 256-byte inode) that an entry costs one inode and no
/// attribute block.
///
/// It holds only what the path and `stat` cannot tell: the name gives the
/// format (its extension) and, through the MD5, the key; so it keeps a 32-bit
/// check of the key (a file renamed or copied under another key is not taken
/// for an entry), the byte count (a cut file is noticed), pixel size and
/// frames, the stored time, and the validators. The URL goes to the shard's
/// `URLLog`. Layout, after the first byte `0xC2` (never the first byte of the
/// text form, which begins `imgcache-entry`):
///
///     key check (4 bytes, little-endian FNV-1a of the key)
///     size, width, height, frames (LEB128; 0 = not known)
///     stored time (8 bytes, the Double's bits, little-endian)
///     flags (1 byte), then the fields the flags announce:
///       0x01 ETag as text (LEB128 length, bytes)
///       0x02 ETag `"<32 hex>"` as 16 bytes; 0x04 with it: weak (`W/`)
///       0x08 Last-Modified as seconds since the epoch (LEB128), when the
///            HTTP date it came from is written back exactly the same
///       0x10 Last-Modified as text (LEB128 length, bytes)
///       0x20 Content-Type as text, when it is not `image/<format>`
///       0x40 no Content-Type was sent
///       0x80 more flags (1 byte), then the fields they announce:
///         0x01 when the response stops being fresh (LEB128 seconds since the epoch)
///         0x02 EXIF orientation (1 byte, 2–8)
///         0x04 the source's frames, for a transform that changed them (LEB128)
///         0x08 a variant's original: its inode and size (LEB128 each)
///         0x10 opted out of AI training (X-Robots-Tag noai, noimageai); no field
///         0x20 an image's placeholder: its dominant colour (3 bytes, RGB), its
///              ThumbHash (LEB128 length, bytes)
///         0x40 a variant's original's width and height, upright (LEB128 each)
enum EntryAttribute {
    static let version: UInt8 = 0xC2

    /// `metadata` in the compact form. Its format is not written (the file's
    /// extension says it); it only decides whether the Content-Type is worth keeping.
    static func encode(_ metadata: EntryMetadata) -> [UInt8] {
        var out: [UInt8] = [version]
        out.reserveCapacity(64)
        appendFixed(&out, UInt64(keyCheck(metadata.key)), bytes: 4)
        appendVarint(&out, UInt64(max(0, metadata.byteCount)))
        appendVarint(&out, UInt64(max(0, metadata.width ?? 0)))
        appendVarint(&out, UInt64(max(0, metadata.height ?? 0)))
        appendVarint(&out, UInt64(max(0, metadata.frameCount ?? 0)))
        appendFixed(&out, metadata.storedAt.bitPattern, bytes: 8)
        var flags: UInt8 = 0
        var tail: [UInt8] = []
        if let etag = metadata.etag {
            if let packed = packedETag(etag) {
                flags |= 0x02 | (packed.weak ? 0x04 : 0)
                tail += packed.bytes
            } else {
                flags |= 0x01
                appendText(&tail, etag)
            }
        }
        if let lastModified = metadata.lastModified {
            if let seconds = HTTPDate.seconds(lastModified), HTTPDate.format(seconds) == lastModified {
                flags |= 0x08
                appendVarint(&tail, UInt64(seconds))
            } else {
                flags |= 0x10
                appendText(&tail, lastModified)
            }
        }
        if let contentType = metadata.contentType {
            if contentType != metadata.format.map(defaultContentType) {
                flags |= 0x20
                appendText(&tail, contentType)
            }
        } else {
            flags |= 0x40
        }
        var more: UInt8 = 0
        var moreTail: [UInt8] = []
        if let freshUntil = metadata.freshUntil {
            more |= 0x01
            appendVarint(&moreTail, UInt64(freshUntil.isFinite ? min(max(0, freshUntil.rounded(.down)), 1e12) : 0))
        }
        if let orientation = metadata.orientation {
            more |= 0x02
            moreTail.append(UInt8(orientation))
        }
        if let sourceFrames = metadata.sourceFrameCount {
            more |= 0x04
            appendVarint(&moreTail, UInt64(sourceFrames))
        }
        if let source = metadata.source {
            more |= 0x08
            appendVarint(&moreTail, source.inode)
            appendVarint(&moreTail, UInt64(max(0, source.byteCount)))
        }
        if metadata.optedOut { more |= 0x10 }
        if let placeholder = metadata.placeholder {
            more |= 0x20
            moreTail += [placeholder.dominantColor.red, placeholder.dominantColor.green, placeholder.dominantColor.blue]
            appendVarint(&moreTail, UInt64(placeholder.thumbHash.count))
            moreTail += placeholder.thumbHash
        }
        if let width = metadata.sourceWidth, let height = metadata.sourceHeight, width > 0, height > 0 {
            more |= 0x40
            appendVarint(&moreTail, UInt64(width))
            appendVarint(&moreTail, UInt64(height))
        }
        if more != 0 { flags |= 0x80 }
        out.append(flags)
        return out + tail + (more != 0 ? [more] + moreTail : [])
    }

    /// The metadata of the image `fileName` in its shard, stored for `key`
    /// (nil: whatever key; the metadata then names none); nil when the bytes are
    /// not this form or are cut short. `forKey` is false when they were written
    /// for another key.
    static func decode(_ bytes: [UInt8], fileName: String, key: String?) -> (metadata: EntryMetadata, forKey: Bool)? {
        var reader = Reader(bytes: bytes)
        guard reader.byte() == version,
              let check = reader.fixed(4),
              let size = reader.varint(), let width = reader.varint(), let height = reader.varint(),
              let frames = reader.varint(), let stored = reader.fixed(8), let flags = reader.byte(),
              // Values no entry has are damage: refused here, never a trap further on.
              size < 1 << 62, width < 1 << 31, height < 1 << 31, frames < 1 << 31, Double(bitPattern: stored).isFinite
        else { return nil }
        var etag: String?, lastModified: String?, contentType: String?
        if flags & 0x01 != 0 { guard let text = reader.text() else { return nil }; etag = text }
        if flags & 0x02 != 0 {
            guard let packed = reader.take(16) else { return nil }
            etag = packedETag(packed, weak: flags & 0x04 != 0)
        }
        if flags & 0x08 != 0 {
            guard let seconds = reader.varint(), seconds < 1 << 40 else { return nil }
            lastModified = HTTPDate.format(Int64(seconds))
        }
        if flags & 0x10 != 0 { guard let text = reader.text() else { return nil }; lastModified = text }
        // The name's last extension (a name without one has no format).
        var name = fileName
        let format = name.withUTF8 { bytes in
            bytes.lastIndex(of: UInt8(ascii: ".")).flatMap { dot in
                CodecRegistry.storedFormat(extensionBytes: UnsafeBufferPointer(rebasing: bytes[(dot + 1)...]))
            }
        }
        if flags & 0x20 != 0 { guard let text = reader.text() else { return nil }; contentType = text }
        else if flags & 0x40 == 0 { contentType = format.map(defaultContentType) }
        var freshUntil: Double?, orientation: Int?, sourceFrames: Int?, source: EntryMetadata.Source?, optedOut = false
        var placeholder: ImagePlaceholder?
        var sourceSize: (width: Int, height: Int)?
        if flags & 0x80 != 0 {
            guard let more = reader.byte() else { return nil }
            optedOut = more & 0x10 != 0
            if more & 0x01 != 0 { guard let seconds = reader.varint(), seconds < 1 << 53 else { return nil }; freshUntil = Double(seconds) }
            if more & 0x02 != 0 { guard let value = reader.byte() else { return nil }; orientation = Int(value) }
            if more & 0x04 != 0 { guard let value = reader.varint(), value < 1 << 31 else { return nil }; sourceFrames = Int(value) }
            if more & 0x08 != 0 {
                guard let inode = reader.varint(), let size = reader.varint(), size < 1 << 62 else { return nil }
                source = EntryMetadata.Source(inode: inode, byteCount: Int64(size))
            }
            if more & 0x20 != 0 {
                guard let color = reader.take(3), let length = reader.varint(), length <= 64, let hash = reader.take(Int(length)) else { return nil }
                placeholder = ImagePlaceholder(dominantColor: RGBColor(red: color[0], green: color[1], blue: color[2]), thumbHash: hash)
            }
            if more & 0x40 != 0 {
                guard let width = reader.varint(), let height = reader.varint(), width < 1 << 31, height < 1 << 31 else { return nil }
                sourceSize = (Int(width), Int(height))
            }
        }
        guard reader.atEnd else { return nil }
        var metadata = EntryMetadata(fileName: fileName, inode: 0, byteCount: Int64(size), key: key ?? "", url: key ?? "",
                                     etag: etag, lastModified: lastModified, contentType: contentType, format: format,
                                     width: width == 0 ? nil : Int(width), height: height == 0 ? nil : Int(height),
                                     frameCount: frames == 0 ? nil : Int(frames), storedAt: Double(bitPattern: stored),
                                     freshUntil: freshUntil, orientation: orientation, sourceFrameCount: sourceFrames,
                                     source: source)
        metadata.optedOut = optedOut
        metadata.placeholder = placeholder
        if let sourceSize { (metadata.sourceWidth, metadata.sourceHeight) = (sourceSize.width, sourceSize.height) }
        return (metadata, key.map { UInt32(check) == keyCheck($0) } ?? true)
    }

    /// Whether `bytes` are in this form (rather than the text form of earlier versions).
    static func isCompact(_ bytes: [UInt8]) -> Bool { bytes.first == version }

    /// FNV-1a over the key's bytes: not security, a check that the attribute is this key's.
    static func keyCheck(_ key: String) -> UInt32 {
        var hash: UInt32 = 0x811C_9DC5
        var key = key
        // Over the bytes where they are (a walk of the `utf8` view checks each step).
        key.withUTF8 { bytes in
            for byte in bytes { hash = (hash ^ UInt32(byte)) &* 0x0100_0193 }
        }
        return hash
    }

    private static func defaultContentType(_ format: ImageFormat) -> String { format.mediaType }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// `"<32 hex>"` (`W/"…"` when weak) from the 16 bytes packed.
    private static func packedETag(_ packed: [UInt8], weak: Bool) -> String {
        var text: [UInt8] = weak ? Array("W/\"".utf8) : [UInt8(ascii: "\"")]
        text.reserveCapacity(text.count + 33)
        for byte in packed {
            text.append(hexDigits[Int(byte >> 4)])
            text.append(hexDigits[Int(byte & 15)])
        }
        text.append(UInt8(ascii: "\""))
        return String(decoding: text, as: UTF8.self)
    }

    /// An ETag of 32 lowercase hex digits in quotes (S3's, many CDNs'), as 16 bytes.
    private static func packedETag(_ etag: String) -> (bytes: [UInt8], weak: Bool)? {
        var text = Substring(etag)
        let weak = text.hasPrefix("W/")
        if weak { text = text.dropFirst(2) }
        guard text.utf8.count == 34, text.first == "\"", text.last == "\"" else { return nil }
        let digits = Array(text.utf8.dropFirst().dropLast())
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case 0x30...0x39: return digit - 0x30
            case 0x61...0x66: return digit - 0x61 + 10
            default: return nil
            }
        }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: 32, by: 2) {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return (bytes, weak)
    }

    private static func appendVarint(_ out: inout [UInt8], _ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            out.append(UInt8(rest & 0x7F) | 0x80)
            rest >>= 7
        }
        out.append(UInt8(rest))
    }

    private static func appendFixed(_ out: inout [UInt8], _ value: UInt64, bytes: Int) {
        for index in 0..<bytes { out.append(UInt8(truncatingIfNeeded: value >> UInt64(8 * index))) }
    }

    private static func appendText(_ out: inout [UInt8], _ text: String) {
        appendVarint(&out, UInt64(text.utf8.count))
        out += text.utf8
    }

    /// Reads the fields in order; every read is bounds-checked.
    private struct Reader {
        let bytes: [UInt8]
        var offset = 0

        var atEnd: Bool { offset == bytes.count }

        mutating func byte() -> UInt8? {
            guard offset < bytes.count else { return nil }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func take(_ count: Int) -> [UInt8]? {
            guard count >= 0, bytes.count - offset >= count else { return nil }
            defer { offset += count }
            return Array(bytes[offset..<offset + count])
        }

        /// `count` (at most 8) bytes as a little-endian number, read where they are.
        mutating func fixed(_ count: Int) -> UInt64? {
            guard count >= 0, count <= 8, bytes.count - offset >= count else { return nil }
            var value: UInt64 = 0
            for place in 0..<count { value |= UInt64(bytes[offset + place]) << UInt64(8 * place) }
            offset += count
            return value
        }

        mutating func varint() -> UInt64? {
            var value: UInt64 = 0
            for shift in stride(from: 0, to: 64, by: 7) {
                guard let next = byte() else { return nil }
                value |= UInt64(next & 0x7F) << UInt64(shift)
                if next & 0x80 == 0 { return value }
            }
            return nil
        }

        mutating func text() -> String? {
            guard let length = varint(), length <= 4096, bytes.count - offset >= Int(length) else { return nil }
            defer { offset += Int(length) }
            return String(decoding: bytes[offset..<offset + Int(length)], as: UTF8.self)
        }
    }
}

/// HTTP dates (RFC 9110's IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`).
package enum HTTPDate {
    /// Seconds since the epoch of an IMF-fixdate; nil for anything else.
    /// (The weekday is not checked here; callers keep the seconds only when
    /// `format` gives the text back exactly.)
    package static func seconds(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        // "Sun, 06 Nov 1994 08:49:37 GMT"
        guard bytes.count == 29, bytes[3] == 0x2C, bytes[4] == 0x20, bytes[7] == 0x20, bytes[11] == 0x20,
              bytes[16] == 0x20, bytes[19] == 0x3A, bytes[22] == 0x3A, bytes[25] == 0x20,
              bytes[26...].elementsEqual("GMT".utf8) else { return nil }
        func number(_ range: Range<Int>) -> Int32? {
            var value: Int32 = 0
            for byte in bytes[range] {
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int32(byte - 0x30)
            }
            return value
        }
        let month = String(decoding: bytes[8..<11], as: UTF8.self)
        guard let day = number(5..<7), let monthIndex = months.firstIndex(of: month), let year = number(12..<16),
              let hour = number(17..<19), let minute = number(20..<22), let second = number(23..<25) else { return nil }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = Int32(monthIndex)
        parts.tm_mday = day
        parts.tm_hour = hour
        parts.tm_min = minute
        parts.tm_sec = second
        let seconds = timegm(&parts)
        return seconds < 0 ? nil : Int64(seconds)
    }

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]

    /// The IMF-fixdate of `seconds` since the epoch. Worked out by hand: glibc's
    /// `gmtime_r` and `strftime` read the time zone files first, seven system
    /// calls on every hit.
    package static func format(_ seconds: Int64) -> String {
        let (days, second) = seconds.quotientAndRemainder(dividingBy: 86_400)
        let (day, secondOfDay) = second < 0 ? (days - 1, second + 86_400) : (days, second)
        // Days since 1970-01-01 to a civil date (the proleptic Gregorian calendar, in 400-year eras).
        let shifted = day + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthFromMarch = (5 * dayOfYear + 2) / 153
        let dayOfMonth = dayOfYear - (153 * monthFromMarch + 2) / 5 + 1
        let month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        let weekday = Int(((day % 7) + 11) % 7)  // 1970-01-01 was a Thursday
        // Written byte by byte into the string's own storage: every hit with a Last-Modified formats one.
        let yearDigits = String(year).utf8
        let weekdayName = weekdayBytes[weekday], monthName = monthBytes[Int(month) - 1]
        return String(unsafeUninitializedCapacity: 25 + yearDigits.count) { text in
            var at = 0
            func put(_ byte: UInt8) { text[at] = byte; at += 1 }
            func twoDigits(_ value: Int64) {
                put(UInt8(ascii: "0") + UInt8(value / 10))
                put(UInt8(ascii: "0") + UInt8(value % 10))
            }
            for byte in weekdayName { put(byte) }
            put(UInt8(ascii: ","))
            put(UInt8(ascii: " "))
            twoDigits(dayOfMonth)
            put(UInt8(ascii: " "))
            for byte in monthName { put(byte) }
            put(UInt8(ascii: " "))
            for byte in yearDigits { put(byte) }
            put(UInt8(ascii: " "))
            twoDigits(secondOfDay / 3600)
            put(UInt8(ascii: ":"))
            twoDigits(secondOfDay / 60 % 60)
            put(UInt8(ascii: ":"))
            twoDigits(secondOfDay % 60)
            for byte in " GMT".utf8 { put(byte) }
            return at
        }
    }

    private static let monthBytes = months.map { Array($0.utf8) }
    private static let weekdayBytes = weekdays.map { Array($0.utf8) }
}
