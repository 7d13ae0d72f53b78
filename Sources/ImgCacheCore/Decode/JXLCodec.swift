import CImgCacheShims

extension ImageFormat {
    public static let jxl = ImageFormat(declaring: "jxl")
}

/// JPEG XL, a bare codestream or in its container, through libjxl: the
/// header (upright size, alpha, bit depth; an animation's frames counted from
/// their headers when the whole file is there), whether it ends where its
/// last frame does, and every frame decoded; written through libjxl.
struct JXLCodec: ImageCodec {
    let format = ImageFormat.jxl
    let displayName = "JPEG XL"
    let fileExtensions = ["jxl"]
    let capabilities: CodecCapabilities = [.decode, .encode, .alpha, .quality]
    let decodeMemoryFactor = 4.0
    let encodeMemoryFactor = 10.0

    /// The codestream's `FF 0A`, or the container's signature box.
    func recognizes(_ bytes: [UInt8]) -> Bool {
        CodecShim.starts(bytes, with: [0xFF, 0x0A])
            || CodecShim.starts(bytes, with: [0, 0, 0, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A])
    }

    func probe(_ bytes: [UInt8]) throws(ImageHeader.ProbeError) -> ImageHeader {
        // First the header alone (what a download's first bytes can tell), then the frames when it animates.
        let still = try read(bytes, complete: false)
        var frames = 1
        if still.header.animated != 0 {
            let counted = try? read(bytes, complete: true)
            frames = counted.map { $0.status == 0 ? max(1, Int($0.header.frame_count)) : 0 } ?? 0
        }
        var header = ImageHeader(format: format, width: Int(still.header.width), height: Int(still.header.height),
                                 frameCount: frames > 0 ? frames : nil, hasAlpha: still.header.has_alpha != 0,
                                 bitDepth: Int(still.header.bit_depth))
        header.hasColourProfile = still.header.has_colour_profile != 0
        return header
    }

    private func read(_ bytes: [UInt8], complete: Bool) throws(ImageHeader.ProbeError) -> (header: ic_jxl_header, status: Int32) {
        var header = ic_jxl_header()
        var buffer = [CChar](repeating: 0, count: 256)
        let status = LibraryOutput.silenced {
            bytes.withUnsafeBufferPointer { ic_jxl_read_header($0.baseAddress, $0.count, complete ? 1 : 0, &header, &buffer, buffer.count) }
        }
        guard status >= 0, status != 1 else {
            let text = CodecShim.message(buffer)
            if text.hasPrefix("cannot load") { throw .libraryMissing(text) }
            throw .corrupt(format, text)
        }
        guard header.width > 0, header.height > 0 else { throw .corrupt(format, "zero width or height") }
        return (header, status)
    }

    /// Whole, as far as its structure tells without decoding a pixel: every frame but the last is
    /// there (libjxl skips each by its table of contents), and a container's boxes all lie within
    /// the file with its codestream's last part (a `jxlp` box marked last, or a `jxlc` box). Where
    /// the last frame's data ends, only a decode tells (`--verify full`, in a worker).
    func missingEnd(of bytes: [UInt8]) -> String? {
        var header = ic_jxl_header()
        var buffer = [CChar](repeating: 0, count: 256)
        let status = LibraryOutput.silenced {
            bytes.withUnsafeBufferPointer { ic_jxl_read_header($0.baseAddress, $0.count, 1, &header, &buffer, buffer.count) }
        }
        if status == 2 { return CodecShim.message(buffer) }
        guard !CodecShim.starts(bytes, with: [0xFF, 0x0A]) else { return nil }
        var offset = 0, boxes = 0
        var sawLastPart = false
        while offset < bytes.count {
            guard offset + 8 <= bytes.count else { return "the file ends inside a box's header" }
            var size = CodecShim.bigEndian(bytes, offset)
            let type = String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self)
            var start = offset + 8
            if size == 1 {
                guard offset + 16 <= bytes.count else { return "the file ends inside a box's header" }
                size = CodecShim.bigEndian(bytes, offset + 8) << 32 | CodecShim.bigEndian(bytes, offset + 12)
                start += 8
            }
            // Size 0: the box runs to the file's end, which is then wherever the file ends.
            if size == 0 {
                return sawLastPart || type == "jxlc" || (type == "jxlp" && lastPart(bytes, start)) ? nil : "its codestream's last part is missing"
            }
            guard size >= start - offset else { return "box \(boxes + 1) is shorter than its header" }
            guard offset + size <= bytes.count else {
                return "the file is \(bytes.count) bytes; its \(ControlCharacters.escaped(type)) box runs to \(offset + size)"
            }
            if type == "jxlc" || (type == "jxlp" && lastPart(bytes, start)) { sawLastPart = true }
            offset += size
            boxes += 1
            if boxes > 1 << 16 { return nil }
        }
        return sawLastPart ? nil : "its codestream's last part is missing"
    }

    /// Whether the `jxlp` box whose contents start at `start` holds the codestream's last part (its counter's high bit).
    private func lastPart(_ bytes: [UInt8], _ start: Int) -> Bool {
        start + 4 <= bytes.count && bytes[start] & 0x80 != 0
    }

    func decode(_ bytes: [UInt8], header: ImageHeader, maximumPixels: PixelLimit,
                maximumFrames: Int) throws(ImageDecoder.DecodeError) -> DecodedImage {
        try CodecShim.decode(bytes, header: header, maximumPixels: maximumPixels, maximumFrames: maximumFrames, ic_jxl_decode)
    }

    func encode(_ rgba: ArraySlice<UInt8>, width: Int, height: Int,
                settings: ImageEncoder.Settings) throws(ImageEncoder.EncodeError) -> [UInt8] {
        // What the picture is stays: an opaque image has no alpha channel.
        let opaque = ImageEncoder.isOpaque(rgba)
        let pixels = opaque ? ImageEncoder.withoutAlpha(rgba) : rgba
        return try CodecShim.encoded(format) { encoded, message, size in
            pixels.withUnsafeBufferPointer { buffer in
                ic_jxl_encode(buffer.baseAddress, UInt32(width), UInt32(height), Int32(settings.lossless ? 100 : settings.quality),
                              opaque ? 0 : 1, encoded, message, size)
            }
        }
    }
}
