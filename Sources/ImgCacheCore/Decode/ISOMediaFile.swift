/// The boxes of an ISO base media file (ISO/IEC 14496-12) that say what an
/// AVIF, HEIC or HEIF image is, read without a library: the brand from
/// `ftyp`, the primary item's properties from `meta` (its size in `ispe`,
/// its bits in `pixi`, the clean aperture, rotation and mirror that make it
/// upright, an alpha item pointing at it), and a sequence's frame count from
/// `moov`. Every read is bounds-checked; what does not parse is nil.
struct ISOMediaFile {
    /// The major brand (`avif`, `heic`, `mif1`), from the `ftyp` box that starts the file.
    static func majorBrand(of bytes: [UInt8]) -> String? {
        guard CodecShim.starts(bytes, with: Array("ftyp".utf8), at: 4), bytes.count >= 12 else { return nil }
        return String(decoding: bytes[8..<12], as: UTF8.self)
    }

    /// HEIF's generic brands: the coding is told by the compatible brands that follow.
    static let genericBrands: Set<String> = ["mif1", "mif2", "mif3", "msf1", "miaf", "heif"]

    /// Whether the file's own brand is one of `brands`, or its brand is generic
    /// and one of `brands` is among the compatible ones.
    static func isBranded(_ bytes: [UInt8], as brands: Set<String>) -> Bool {
        guard let major = majorBrand(of: bytes) else { return false }
        return brands.contains(major) || (genericBrands.contains(major) && self.brands(of: bytes).contains(where: brands.contains))
    }

    /// The major and compatible brands.
    static func brands(of bytes: [UInt8]) -> [String] {
        guard let major = majorBrand(of: bytes) else { return [] }
        let size = min(CodecShim.bigEndian(bytes, 0), bytes.count)
        var brands = [major]
        var offset = 16
        while offset + 4 <= size {
            brands.append(String(decoding: bytes[offset..<(offset + 4)], as: UTF8.self))
            offset += 4
        }
        return brands
    }

    /// One box: its type and where its content lies in the file.
    struct Box {
        let type: String
        let contentStart: Int
        /// Where the box ends (the file's end for a box of size 0).
        let end: Int
    }

    let bytes: [UInt8]

    /// The boxes one after another in `start..<end`; stops at the first that
    /// does not fit (`truncated` then says where it would have ended).
    func boxes(in range: Range<Int>) -> (boxes: [Box], overrun: (type: String, end: Int)?) {
        var result: [Box] = []
        var offset = range.lowerBound
        while offset + 8 <= range.upperBound, result.count < 4096 {
            var size = CodecShim.bigEndian(bytes, offset)
            let type = String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self)
            var header = 8
            if size == 1 {
                guard offset + 16 <= range.upperBound, let large = uint64(at: offset + 8), large <= UInt64(Int.max) else {
                    return (result, (type, Int.max))
                }
                size = Int(large)
                header = 16
            } else if size == 0 {
                size = range.upperBound - offset
            }
            guard size >= header else { return (result, (type, Int.max)) }
            let (end, overflow) = offset.addingReportingOverflow(size)
            guard !overflow, end <= range.upperBound else { return (result, (type, overflow ? Int.max : end)) }
            result.append(Box(type: type, contentStart: offset + header, end: end))
            offset = end
        }
        return (result, nil)
    }

    func children(of box: Box, skipping prefix: Int = 0) -> [Box] {
        guard box.contentStart + prefix <= box.end else { return [] }
        return boxes(in: (box.contentStart + prefix)..<box.end).boxes
    }

    func child(_ type: String, of box: Box, skipping prefix: Int = 0) -> Box? {
        children(of: box, skipping: prefix).first { $0.type == type }
    }

    func uint8(at offset: Int) -> Int? { offset >= 0 && offset < bytes.count ? Int(bytes[offset]) : nil }

    func uint16(at offset: Int) -> Int? {
        guard offset >= 0, offset + 2 <= bytes.count else { return nil }
        return Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
    }

    func uint32(at offset: Int) -> Int? {
        guard offset >= 0, offset + 4 <= bytes.count else { return nil }
        return CodecShim.bigEndian(bytes, offset)
    }

    func uint64(at offset: Int) -> UInt64? {
        guard let high = uint32(at: offset), let low = uint32(at: offset + 4) else { return nil }
        return UInt64(high) << 32 | UInt64(low)
    }

    // MARK: - The image items

    /// What the boxes say of the picture a viewer shows.
    struct Picture: Equatable {
        /// Width and height upright: after the clean aperture and the rotation.
        var width: Int
        var height: Int
        /// The size coded (`ispe`), before the clean aperture crops it.
        var codedWidth: Int
        var codedHeight: Int
        var bitDepth: Int
        var hasAlpha: Bool
        /// Its colours are not sRGB's: an ICC profile (`colr` of type `prof` or `rICC`), or `nclx`
        /// primaries other than BT.709's, which decoding turns into sRGB.
        var hasColourProfile = false
        /// Frames of an image sequence (`moov`); nil for a still image.
        var frameCount: Int?
    }

    /// The primary item's picture (or, without items, a sequence's first track's).
    func picture() -> Picture? {
        let top = boxes(in: 0..<bytes.count).boxes
        let sequence = top.first { $0.type == "moov" }.flatMap(sequenceTrack)
        guard let meta = top.first(where: { $0.type == "meta" }), let still = primaryPicture(meta) else {
            return sequence
        }
        var picture = still
        picture.frameCount = sequence?.frameCount
        return picture
    }

    private func primaryPicture(_ meta: Box) -> Picture? {
        let parts = children(of: meta, skipping: 4)
        guard let pitm = parts.first(where: { $0.type == "pitm" }),
              let version = uint8(at: pitm.contentStart),
              let primary = version == 0 ? uint16(at: pitm.contentStart + 4) : uint32(at: pitm.contentStart + 4),
              let iprp = parts.first(where: { $0.type == "iprp" }),
              let ipco = child("ipco", of: iprp) else { return nil }
        let properties = children(of: ipco)
        let associations = self.associations(children(of: iprp).filter { $0.type == "ipma" })
        func property(_ type: String, of item: Int) -> Box? {
            associations[item, default: []].lazy.filter { $0 >= 1 && $0 <= properties.count }
                .map { properties[$0 - 1] }.first { $0.type == type }
        }
        guard let ispe = property("ispe", of: primary),
              var width = uint32(at: ispe.contentStart + 4), var height = uint32(at: ispe.contentStart + 8),
              width > 0, height > 0 else { return nil }
        var coded = (width, height)
        if let clap = property("clap", of: primary), let size = cleanAperture(clap, width: width, height: height) {
            (width, height) = size
        }
        if let irot = property("irot", of: primary), let angle = uint8(at: irot.contentStart), angle & 1 == 1 {
            swap(&width, &height)
            coded = (coded.1, coded.0)
        }
        let references = self.references(parts.first { $0.type == "iref" })
        // A grid's bits are its tiles' (the grid item itself often has no pixi).
        let tiles = references.filter { $0.type == "dimg" && $0.from == primary }.flatMap(\.to)
        let depth = ([primary] + tiles.prefix(1)).lazy.compactMap { property("pixi", of: $0) }
            .compactMap { self.uint8(at: $0.contentStart + 5) }.first ?? 8
        let alpha = references.contains { reference in
            reference.type == "auxl" && reference.to.contains(primary)
                && property("auxC", of: reference.from).map { auxiliaryType($0).contains("alpha") || auxiliaryType($0).hasSuffix("auxid:1") } == true
        }
        // What a decoder allocates, whatever ispe says: a grid's canvas (from its
        // descriptor) and its largest tile. The pixel limit is checked against the most.
        // Products of 32-bit sizes can pass Int's range: saturated, they are still over any limit.
        func area(_ size: (Int, Int)) -> Int {
            let (product, overflow) = size.0.multipliedReportingOverflow(by: size.1)
            return overflow ? Int.max : product
        }
        var largest = area(coded)
        for tile in tiles.prefix(4096) {
            if let tileSize = property("ispe", of: tile), let w = uint32(at: tileSize.contentStart + 4),
               let h = uint32(at: tileSize.contentStart + 8), area((w, h)) > largest {
                largest = area((w, h))
                coded = (w, h)
            }
        }
        if itemTypes(parts)[primary] == "grid", let canvas = gridCanvas(primary, meta: parts), area(canvas) > largest {
            coded = canvas
        }
        // Every colour box of the primary item (or its first tile): a profile, or primaries to convert.
        let colours = ([primary] + tiles.prefix(1)).flatMap { item in
            associations[item, default: []].filter { $0 >= 1 && $0 <= properties.count }.map { properties[$0 - 1] }
                .filter { $0.type == "colr" }
        }
        let profiled = colours.contains { colr in
            guard colr.contentStart + 4 <= colr.end else { return false }
            let kind = String(decoding: bytes[colr.contentStart..<colr.contentStart + 4], as: UTF8.self)
            if kind == "prof" || kind == "rICC" { return true }
            // nclx: primaries, then transfer (ITU-T H.273). BT.709's primaries (1), or none said, are sRGB's;
            // PQ and HLG (16, 18) are left as they are, as decoding leaves them.
            guard kind == "nclx", let primaries = uint16(at: colr.contentStart + 4), let transfer = uint16(at: colr.contentStart + 6) else {
                return false
            }
            return ![0, 1, 2].contains(primaries) && ![16, 18].contains(transfer)
        }
        var picture = Picture(width: width, height: height, codedWidth: coded.0, codedHeight: coded.1, bitDepth: depth, hasAlpha: alpha,
                              frameCount: nil)
        picture.hasColourProfile = profiled
        return picture
    }

    /// Each item's type (`av01`, `hvc1`, `grid`), from `iinf`.
    private func itemTypes(_ meta: [Box]) -> [Int: String] {
        guard let iinf = meta.first(where: { $0.type == "iinf" }), let version = uint8(at: iinf.contentStart) else { return [:] }
        var types: [Int: String] = [:]
        for infe in children(of: iinf, skipping: version == 0 ? 6 : 8) where infe.type == "infe" {
            guard let infeVersion = uint8(at: infe.contentStart), infeVersion >= 2 else { continue }
            let idWidth = infeVersion == 2 ? 2 : 4
            guard let id = idWidth == 2 ? uint16(at: infe.contentStart + 4) : uint32(at: infe.contentStart + 4) else { continue }
            let typeAt = infe.contentStart + 4 + idWidth + 2
            guard typeAt + 4 <= infe.end else { continue }
            types[id] = String(decoding: bytes[typeAt..<(typeAt + 4)], as: UTF8.self)
        }
        return types
    }

    /// Where each item's data lies, from `iloc`: its construction method (0:
    /// in the file, 1: in `idat`) and its extents (offset, length; a length of
    /// 0 runs to the end).
    private func itemLocations(_ meta: [Box]) -> [Int: (method: Int, extents: [(offset: Int, length: Int)])] {
        guard let iloc = meta.first(where: { $0.type == "iloc" }), let version = uint8(at: iloc.contentStart),
              let sizes = uint16(at: iloc.contentStart + 4) else { return [:] }
        let offsetSize = sizes >> 12, lengthSize = (sizes >> 8) & 0xF, baseSize = (sizes >> 4) & 0xF
        let indexSize = version >= 1 ? sizes & 0xF : 0
        func number(_ at: Int, _ width: Int) -> Int? {
            switch width {
            case 0: return 0
            case 2: return uint16(at: at)
            case 4: return uint32(at: at)
            case 8: return uint64(at: at).flatMap { $0 <= UInt64(Int.max / 4) ? Int($0) : nil }
            default: return nil
            }
        }
        var locations: [Int: (method: Int, extents: [(offset: Int, length: Int)])] = [:]
        var at = iloc.contentStart + 6
        guard let count = version < 2 ? uint16(at: at) : uint32(at: at) else { return [:] }
        at += version < 2 ? 2 : 4
        for _ in 0..<min(count, 1 << 16) {
            guard let id = version < 2 ? uint16(at: at) : uint32(at: at) else { break }
            at += version < 2 ? 2 : 4
            var method = 0
            if version >= 1 { method = (uint16(at: at) ?? 0) & 0xF; at += 2 }
            at += 2  // data reference index
            guard let base = number(at, baseSize), let extentCount = uint16(at: at + baseSize) else { break }
            at += baseSize + 2
            var extents: [(offset: Int, length: Int)] = []
            for _ in 0..<extentCount {
                at += indexSize
                guard let offset = number(at, offsetSize), let length = number(at + offsetSize, lengthSize) else { return locations }
                at += offsetSize + lengthSize
                extents.append((base + offset, length))
            }
            locations[id] = (method, extents)
        }
        return locations
    }

    /// A grid item's canvas size, from the descriptor its `iloc` points at (in
    /// `idat` or in the file): version, flags, rows and columns, then the
    /// output width and height in 16 or 32 bits.
    private func gridCanvas(_ item: Int, meta: [Box]) -> (Int, Int)? {
        guard let location = itemLocations(meta)[item], let first = location.extents.first else { return nil }
        var start = first.offset
        if location.method == 1 {
            guard let idat = meta.first(where: { $0.type == "idat" }) else { return nil }
            start = idat.contentStart + first.offset
        }
        guard let flags = uint8(at: start + 1) else { return nil }
        let wide = flags & 1 == 1
        guard let w = wide ? uint32(at: start + 4) : uint16(at: start + 4),
              let h = wide ? uint32(at: start + 8) : uint16(at: start + 6) else { return nil }
        return (w, h)
    }

    /// Where the last byte of item data in the file (construction method 0)
    /// ends, by `iloc`; nil without items.
    func itemDataEnd() -> Int? {
        guard let meta = boxes(in: 0..<bytes.count).boxes.first(where: { $0.type == "meta" }) else { return nil }
        let ends = itemLocations(children(of: meta, skipping: 4)).values.filter { $0.method == 0 }
            .flatMap { $0.extents.map { $0.offset + $0.length } }
        return ends.max()
    }

    /// Each item's property indices (1-based into `ipco`), from every `ipma` box.
    private func associations(_ boxes: [Box]) -> [Int: [Int]] {
        var result: [Int: [Int]] = [:]
        for box in boxes {
            guard let version = uint8(at: box.contentStart), let flags = uint32(at: box.contentStart).map({ $0 & 0xFFFFFF }),
                  let count = uint32(at: box.contentStart + 4) else { continue }
            var offset = box.contentStart + 8
            for _ in 0..<min(count, 1 << 16) {
                guard let item = version < 1 ? uint16(at: offset) : uint32(at: offset) else { break }
                offset += version < 1 ? 2 : 4
                guard let links = uint8(at: offset) else { break }
                offset += 1
                for _ in 0..<links {
                    guard let value = flags & 1 == 1 ? uint16(at: offset).map({ $0 & 0x7FFF }) : uint8(at: offset).map({ $0 & 0x7F }),
                          offset < box.end else { break }
                    offset += flags & 1 == 1 ? 2 : 1
                    result[item, default: []].append(value)
                }
            }
        }
        return result
    }

    /// The item references of `iref`: their type, the item they are from and the items they point to.
    private func references(_ iref: Box?) -> [(type: String, from: Int, to: [Int])] {
        guard let iref, let version = uint8(at: iref.contentStart) else { return [] }
        return children(of: iref, skipping: 4).compactMap { box in
            let width = version == 0 ? 2 : 4
            let read = { (offset: Int) in width == 2 ? self.uint16(at: offset) : self.uint32(at: offset) }
            guard let from = read(box.contentStart), let count = uint16(at: box.contentStart + width) else { return nil }
            let targets = (0..<count).compactMap { read(box.contentStart + width + 2 + $0 * width) }
            return (box.type, from, targets)
        }
    }

    private func auxiliaryType(_ auxC: Box) -> String {
        let start = auxC.contentStart + 4
        guard start < auxC.end else { return "" }
        return String(decoding: bytes[start..<auxC.end].prefix { $0 != 0 }, as: UTF8.self)
    }

    /// The clean aperture's width and height in whole pixels, when it is a
    /// rectangle inside the picture, worked out as the decoder crops it (its
    /// centre from the offsets, its corner rounded half up); nil when the
    /// decoder would ignore it.
    private func cleanAperture(_ clap: Box, width: Int, height: Int) -> (width: Int, height: Int)? {
        let at = clap.contentStart
        guard let widthN = uint32(at: at), let widthD = uint32(at: at + 4), let heightN = uint32(at: at + 8),
              let heightD = uint32(at: at + 12), let horizontalN = uint32(at: at + 16), let horizontalD = uint32(at: at + 20),
              let verticalN = uint32(at: at + 24), let verticalD = uint32(at: at + 28),
              widthD > 0, heightD > 0, horizontalD > 0, verticalD > 0 else { return nil }
        // The offsets are signed numerators over denominators read as signed too, as the decoder reads them.
        func signed(_ value: Int) -> Double { Double(Int32(truncatingIfNeeded: value)) }
        guard signed(horizontalD) != 0, signed(verticalD) != 0 else { return nil }
        let cleanWidth = Double(widthN) / Double(widthD), cleanHeight = Double(heightN) / Double(heightD)
        let centreX = signed(horizontalN) / signed(horizontalD) + Double(width - 1) / 2
        let centreY = signed(verticalN) / signed(verticalD) + Double(height - 1) / 2
        let left = (centreX - (cleanWidth - 1) / 2 + 0.5).rounded(.down), top = (centreY - (cleanHeight - 1) / 2 + 0.5).rounded(.down)
        let w = Int(cleanWidth), h = Int(cleanHeight)
        guard left.isFinite, top.isFinite, left >= 0, top >= 0, w > 0, h > 0,
              left + Double(w) <= Double(width), top + Double(h) <= Double(height) else { return nil }
        return (w, h)
    }

    /// A sequence's picture from its first picture track: size from `tkhd`, frames from `stsz`.
    private func sequenceTrack(_ moov: Box) -> Picture? {
        for trak in children(of: moov) where trak.type == "trak" {
            guard let mdia = child("mdia", of: trak), let hdlr = child("hdlr", of: mdia),
                  hdlr.contentStart + 12 <= hdlr.end,
                  String(decoding: bytes[(hdlr.contentStart + 8)..<(hdlr.contentStart + 12)], as: UTF8.self) == "pict",
                  let tkhd = child("tkhd", of: trak), let version = uint8(at: tkhd.contentStart) else { continue }
            let sizeAt = tkhd.contentStart + 4 + (version == 1 ? 32 : 20) + 52
            guard let width = uint32(at: sizeAt).map({ $0 >> 16 }), let height = uint32(at: sizeAt + 4).map({ $0 >> 16 }),
                  width > 0, height > 0 else { continue }
            let stsz = child("minf", of: mdia).flatMap { child("stbl", of: $0) }.flatMap { child("stsz", of: $0) }
            let frames = stsz.flatMap { uint32(at: $0.contentStart + 8) }
            return Picture(width: width, height: height, codedWidth: width, codedHeight: height, bitDepth: 8, hasAlpha: false,
                           frameCount: frames.map { max(1, $0) })
        }
        return nil
    }

    // MARK: - Completeness

    /// What is missing at the end: nil when every top-level box ends within the file.
    func missingEnd() -> String? {
        let (top, overrun) = boxes(in: 0..<bytes.count)
        if let overrun {
            // A box type is four bytes of the file: shown only when it reads as one.
            let type = overrun.type.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == " ") }) ? "its \(overrun.type) box" : "a box"
            return overrun.end == Int.max ? "\(type) has a broken size" : "the file is \(bytes.count) bytes; \(type) ends at \(overrun.end)"
        }
        // Fewer than eight bytes after the last box: the start of a box cut short.
        if let last = top.last, last.end < bytes.count { return "the file ends inside a box header, at \(bytes.count) bytes" }
        guard top.contains(where: { $0.type == "meta" || $0.type == "moov" }) else { return "the file has no image data" }
        // Every item's data must be in the file, as `iloc` places it.
        if let end = itemDataEnd(), end > bytes.count {
            return "the file is \(bytes.count) bytes; its image data runs to \(end)"
        }
        return nil
    }

}

/// Creation and modification times of a sequence (`mvhd`, `tkhd`, `mdhd` in `moov`) set to 0, as
/// ISO/IEC 14496-12 allows when they are not known, so that the same frames make the same bytes.
extension ISOMediaFile {
    static func withoutCreationTimes(_ bytes: [UInt8]) -> [UInt8] {
        let file = ISOMediaFile(bytes: bytes)
        var result = bytes
        func clear(_ box: Box) {
            switch box.type {
            case "mvhd", "tkhd", "mdhd":
                // Version 0: two 32-bit times after the version and flags; version 1: two 64-bit ones.
                guard let version = file.uint8(at: box.contentStart) else { return }
                let width = version == 1 ? 8 : 4
                let start = box.contentStart + 4, end = start + 2 * width
                guard end <= box.end else { return }
                for index in start..<end { result[index] = 0 }
            case "moov", "trak", "mdia":
                for child in file.children(of: box) { clear(child) }
            default:
                break
            }
        }
        for box in file.boxes(in: 0..<bytes.count).boxes where box.type == "moov" { clear(box) }
        return result
    }
}

/// What AVIF, HEIC and HEIF codecs share: the header from the boxes, and the end by box sizes.
extension ISOMediaFile {
    static func header(_ bytes: [UInt8], format: ImageFormat) throws(ImageHeader.ProbeError) -> ImageHeader {
        guard let picture = ISOMediaFile(bytes: bytes).picture() else {
            throw .corrupt(format, "no primary image with a size in its boxes")
        }
        var header = ImageHeader(format: format, width: picture.width, height: picture.height, frameCount: picture.frameCount ?? 1,
                                 hasAlpha: picture.hasAlpha, bitDepth: picture.bitDepth)
        header.codedWidth = picture.codedWidth
        header.codedHeight = picture.codedHeight
        header.hasColourProfile = picture.hasColourProfile
        return header
    }
}
