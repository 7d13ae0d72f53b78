/// What the cache knows about one entry, as a few lines of text kept in an
/// extended attribute of the image (or a sidecar file, see `DiskCache`). It
/// names the image's inode and size, so an image and a sidecar file that were
/// not committed together are never taken for an entry.
public struct EntryMetadata: Equatable, Sendable {
    /// Where an entry's metadata is kept.
    public enum Placement: String, Equatable, Sendable {
        /// The `user.imgcache` extended attribute of the image file.
        case attribute
        /// The file `<digest>.meta` beside the image.
        case sidecarFile = "file"
    }

    /// The image file's name inside its shard folder.
    public var fileName: String {
        get { box.fields.fileName }
        set { unique().fields.fileName = newValue }
    }

    /// Inode of the image file this metadata was written for.
    public var inode: UInt64 {
        get { box.fields.inode }
        set { unique().fields.inode = newValue }
    }

    /// Size in bytes of the image file.
    public var byteCount: Int64 {
        get { box.fields.byteCount }
        set { unique().fields.byteCount = newValue }
    }

    /// The cache key (the URL, after any key filter).
    public var key: String {
        get { box.fields.key }
        set { unique().fields.key = newValue }
    }

    /// The URL the bytes were downloaded from.
    public var url: String {
        get { box.fields.url }
        set { unique().fields.url = newValue }
    }

    public var etag: String? {
        get { box.fields.etag }
        set { unique().fields.etag = newValue }
    }

    public var lastModified: String? {
        get { box.fields.lastModified }
        set { unique().fields.lastModified = newValue }
    }

    public var contentType: String? {
        get { box.fields.contentType }
        set { unique().fields.contentType = newValue }
    }

    public var format: ImageFormat? {
        get { box.fields.format }
        set { unique().fields.format = newValue }
    }

    public var width: Int? {
        get { box.fields.width }
        set { unique().fields.width = newValue }
    }

    public var height: Int? {
        get { box.fields.height }
        set { unique().fields.height = newValue }
    }

    public var frameCount: Int? {
        get { box.fields.frameCount }
        set { unique().fields.frameCount = newValue }
    }

    /// When the entry was stored, in seconds since the epoch.
    public var storedAt: Double {
        get { box.fields.storedAt }
        set { unique().fields.storedAt = newValue }
    }

    /// When the response it came from stops being fresh (RFC 9111), in
    /// seconds since the epoch; nil when not known (then it is stale).
    public var freshUntil: Double? {
        get { box.fields.freshUntil }
        set { unique().fields.freshUntil = newValue }
    }

    /// The EXIF orientation (2–8) a JPEG asks for; nil when upright as stored.
    public var orientation: Int? {
        get { box.fields.orientation }
        set { unique().fields.orientation = newValue }
    }

    /// A transformed entry's source had this many frames, when it had
    /// another number than the entry (an animation thumbnailed as a still).
    public var sourceFrameCount: Int? {
        get { box.fields.sourceFrameCount }
        set { unique().fields.sourceFrameCount = newValue }
    }

    /// A variant's original as it was when the variant was made: the variant
    /// stands for that original only (a refresh that brings new bytes makes a
    /// new file, with another inode).
    public var source: Source? {
        get { box.fields.source }
        set { unique().fields.source = newValue }
    }

    /// A variant's original's width and height, upright: what the image as served measured,
    /// known from the variant alone (the original not kept, or in another cache).
    public var sourceWidth: Int? {
        get { box.fields.sourceWidth }
        set { unique().fields.sourceWidth = newValue }
    }

    public var sourceHeight: Int? {
        get { box.fields.sourceHeight }
        set { unique().fields.sourceHeight = newValue }
    }

    /// The server asked that the image not be used to train AI (X-Robots-Tag
    /// `noai` or `noimageai`): exports leave it out unless asked.
    public var optedOut: Bool {
        get { box.fields.optedOut }
        set { unique().fields.optedOut = newValue }
    }

    /// An image's placeholder entry: its dominant colour and ThumbHash (the file is its preview).
    public var placeholder: ImagePlaceholder? {
        get { box.fields.placeholder }
        set { unique().fields.placeholder = newValue }
    }

    /// A sidecar's check of its image's first bytes (FNV-1a of up to 4 KiB): the image copied with a new
    /// inode (a cache restored by tar) is still known as its own.
    public var head: UInt64? {
        get { box.fields.head }
        set { unique().fields.head = newValue }
    }

    /// The values, copy-on-write (`CopyOnWriteBox`): an entry's metadata is copied at each step of a lookup's answer.
    private var box: CopyOnWriteBox<Fields>

    fileprivate struct Fields: Equatable {
        var fileName: String
        var inode: UInt64
        var byteCount: Int64
        var key: String
        var url: String
        var etag: String? = nil
        var lastModified: String? = nil
        var contentType: String? = nil
        var format: ImageFormat? = nil
        var width: Int? = nil
        var height: Int? = nil
        var frameCount: Int? = nil
        var storedAt: Double
        var freshUntil: Double? = nil
        var orientation: Int? = nil
        var sourceFrameCount: Int? = nil
        var source: Source? = nil
        var sourceWidth: Int? = nil
        var sourceHeight: Int? = nil
        var optedOut: Bool = false
        var placeholder: ImagePlaceholder? = nil
        var head: UInt64? = nil
    }

    private mutating func unique() -> CopyOnWriteBox<Fields> { CopyOnWriteBox.unique(&box) }

    public static func == (lhs: EntryMetadata, rhs: EntryMetadata) -> Bool { CopyOnWriteBox.same(lhs.box, rhs.box) }

    /// The `head` of a file's first bytes.
    public static func head(of prefix: ArraySlice<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in prefix.prefix(headLength) { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
        return hash
    }

    /// How many first bytes `head` covers.
    public static let headLength = 4096

    /// Which file an entry was made from: its inode and size. Every body a
    /// download stores is a new file, written beside the one it replaces, so
    /// a changed original never has the inode of the one it replaced; a 304
    /// keeps the file, and its variants.
    public struct Source: Equatable, Sendable {
        public let inode: UInt64
        public let byteCount: Int64

        public init(inode: UInt64, byteCount: Int64) {
            self.inode = inode
            self.byteCount = byteCount
        }

        /// The stamp of the entry `metadata` describes.
        public init(of metadata: EntryMetadata) {
            self.init(inode: metadata.inode, byteCount: metadata.byteCount)
        }
    }

    public init(fileName: String, inode: UInt64, byteCount: Int64, key: String, url: String,
                etag: String? = nil, lastModified: String? = nil, contentType: String? = nil,
                format: ImageFormat? = nil, width: Int? = nil, height: Int? = nil, frameCount: Int? = nil,
                storedAt: Double, freshUntil: Double? = nil, orientation: Int? = nil, sourceFrameCount: Int? = nil,
                source: Source? = nil) {
        box = CopyOnWriteBox(Fields(
            fileName: fileName, inode: inode, byteCount: byteCount, key: key, url: url, etag: etag,
            lastModified: lastModified, contentType: contentType, format: format, width: width, height: height,
            frameCount: frameCount, storedAt: storedAt,
            // Whole seconds within what every form keeps (no trap on a value from a file).
            freshUntil: freshUntil.flatMap { $0.isFinite ? min(max(0, $0.rounded(.down)), 1e12) : nil },
            orientation: orientation.flatMap { (2...8).contains($0) ? $0 : nil },
            sourceFrameCount: sourceFrameCount.flatMap { $0 > 0 ? $0 : nil },
            source: source))
    }

    /// This metadata, marked opted out of AI training when `optedOut`.
    func optingOut(_ optedOut: Bool) -> EntryMetadata {
        var metadata = self
        metadata.optedOut = optedOut
        return metadata
    }

    /// Whether the response it came from is still fresh at `now`.
    public func isFresh(at now: Double) -> Bool {
        freshUntil.map { now < $0 } ?? false
    }

    /// Width and height as the image is shown: swapped when its orientation turns it a quarter.
    public var uprightSize: (width: Int?, height: Int?) {
        (orientation ?? 1) >= 5 ? (height, width) : (width, height)
    }

    /// First line of every metadata file; a file without it is not ours.
    static let signature = "imgcache-entry 1"

    /// The metadata as text: the signature line, then `name value` lines with
    /// `%`, CR and LF percent-escaped in values.
    public func serialized() -> String {
        var lines = [EntryMetadata.signature]
        func add(_ name: String, _ value: String?) {
            guard let value else { return }
            lines.append(name + " " + EntryMetadata.escape(value))
        }
        add("file", fileName)
        add("inode", String(inode))
        add("size", String(byteCount))
        add("key", key)
        // Usually the key is the URL; it is then written once, to keep the
        // metadata small enough to live inside the inode's attribute space.
        if url != key { add("url", url) }
        add("etag", etag)
        add("last-modified", lastModified)
        add("content-type", contentType)
        add("format", format?.rawValue)
        add("width", width.map(String.init))
        add("height", height.map(String.init))
        add("frames", frameCount.map(String.init))
        add("stored", String(storedAt))
        add("fresh-until", freshUntil.map { String(Int64($0.isFinite ? min(max(0, $0.rounded(.down)), 1e12) : 0)) })
        add("orientation", orientation.map(String.init))
        add("source-frames", sourceFrameCount.map(String.init))
        add("source", source.map { "\($0.inode) \($0.byteCount)" })
        if let width = sourceWidth, let height = sourceHeight { add("source-size", "\(width)x\(height)") }
        add("opted-out", optedOut ? "noai" : nil)
        add("dominant-color", placeholder.map(\.dominantColor.description))
        add("thumbhash", placeholder?.thumbHashBase64)
        add("head", head.map { String($0, radix: 16) })
        return lines.joined(separator: "\n") + "\n"
    }

    /// Parses `serialized()` output; nil for anything else, including a file cut short.
    public init?(parsing text: String) {
        // Read as bytes: every lookup parses metadata, and byte slices cost far
        // less than Character-based splitting.
        let bytes = Array(text.utf8)
        guard bytes.last == 0x0A else { return nil }
        var fields: [String: String] = [:]
        var start = 0
        var sawSignature = false
        while start < bytes.count, let end = bytes[start...].firstIndex(of: 0x0A) {
            let line = bytes[start..<end]
            start = end + 1
            guard sawSignature else {
                guard line.elementsEqual(EntryMetadata.signature.utf8) else { return nil }
                sawSignature = true
                continue
            }
            if line.isEmpty { continue }
            guard let space = line.firstIndex(of: 0x20) else { return nil }
            let value = String(decoding: line[(space + 1)...], as: UTF8.self)
            fields[String(decoding: line[..<space], as: UTF8.self)] = value.utf8.contains(0x25) ? EntryMetadata.unescape(value[...]) : value
        }
        guard sawSignature else { return nil }
        guard let fileName = fields["file"], let inode = fields["inode"].flatMap({ UInt64($0) }),
              let size = fields["size"].flatMap({ Int64($0) }), let key = fields["key"],
              let stored = fields["stored"].flatMap({ Double($0) }) else { return nil }
        self.init(fileName: fileName, inode: inode, byteCount: size, key: key, url: fields["url"] ?? key,
                  etag: fields["etag"], lastModified: fields["last-modified"], contentType: fields["content-type"],
                  format: fields["format"].flatMap(ImageFormat.init(rawValue:)),
                  width: fields["width"].flatMap { Int($0) }, height: fields["height"].flatMap { Int($0) },
                  frameCount: fields["frames"].flatMap { Int($0) }, storedAt: stored,
                  freshUntil: fields["fresh-until"].flatMap { Int64($0) }.map(Double.init),
                  orientation: fields["orientation"].flatMap { Int($0) },
                  sourceFrameCount: fields["source-frames"].flatMap { Int($0) },
                  source: fields["source"].flatMap(EntryMetadata.parseSource))
        optedOut = fields["opted-out"] != nil
        if let size = fields["source-size"]?.split(separator: "x"), size.count == 2, let width = Int(size[0]), let height = Int(size[1]),
           width > 0, height > 0 {
            (sourceWidth, sourceHeight) = (width, height)
        }
        head = fields["head"].flatMap { UInt64($0, radix: 16) }
        if let color = fields["dominant-color"].flatMap({ try? RGBColor(parsing: $0) }),
           let hash = fields["thumbhash"].flatMap(Base64.decoded), !hash.isEmpty {
            placeholder = ImagePlaceholder(dominantColor: color, thumbHash: hash)
        }
    }

    private static func parseSource(_ text: String) -> Source? {
        let parts = text.split(separator: " ")
        guard parts.count == 2, let inode = UInt64(parts[0]), let size = Int64(parts[1]), size >= 0 else { return nil }
        return Source(inode: inode, byteCount: size)
    }

    static func escape(_ value: String) -> String {
        guard value.contains(where: { $0 == "%" || $0 == "\n" || $0 == "\r" }) else { return value }
        var out = ""
        for character in value {
            switch character {
            case "%": out += "%25"
            case "\n": out += "%0A"
            case "\r": out += "%0D"
            case "\r\n": out += "%0D%0A"
            default: out.append(character)
            }
        }
        return out
    }

    static func unescape(_ value: Substring) -> String {
        guard value.contains("%") else { return String(value) }
        var out = ""
        var rest = value[...]
        while let percent = rest.firstIndex(of: "%") {
            out += rest[..<percent]
            let code = rest[percent...].prefix(3)
            switch code {
            case "%25": out += "%"
            case "%0A": out += "\n"
            case "%0D": out += "\r"
            default: out += code
            }
            rest = rest[code.endIndex...]
        }
        return out + rest
    }
}
