import CImgCacheShims

extension ImageFormat {
    public static let gif = ImageFormat(declaring: "gif")
}

/// GIF through giflib: the logical screen and a walk of the blocks (frames
/// and the first frame's transparency) read here, decode with every frame
/// composited, and encode (each frame quantised to 255 colours and a
/// transparent one), still or animated.
struct GIFCodec: ImageCodec {
    let format = ImageFormat.gif
    let displayName = "GIF"
    let fileExtensions = ["gif"]
    let capabilities: CodecCapabilities = [.decode, .encode, .animation, .alpha]
    let decodeMemoryFactor = 2.0
    let encodeMemoryFactor = 2.0

    func recognizes(_ bytes: [UInt8]) -> Bool {
        CodecShim.starts(bytes, with: Array("GIF87a".utf8)) || CodecShim.starts(bytes, with: Array("GIF89a".utf8))
    }

    /// Reads the logical screen and walks the blocks to count frames and find
    /// a transparent colour: every step consumes bytes, so a hostile file
    /// (endless extensions, absurd lengths) ends the walk at its last byte.
    /// (So a GIF cut exactly between two frames, its trailer lost, passes.)
    func probe(_ bytes: [UInt8]) throws(ImageHeader.ProbeError) -> ImageHeader {
        // Every frame's blocks are walked (to count frames) on every GIF downloaded: without
        // the array's bounds checks and retains.
        try bytes.withUnsafeBufferPointer { (bytes) throws(ImageHeader.ProbeError) -> ImageHeader in try probe(bytes) }
    }

    /// Skips data sub-blocks from `offset` up to and including the terminator; false when the file ends first.
    private static func skipSubBlocks(_ bytes: UnsafeBufferPointer<UInt8>, _ offset: inout Int) -> Bool {
        while offset < bytes.count {
            let size = Int(bytes[offset])
            offset += 1 + size
            if size == 0 { return offset <= bytes.count }
        }
        return false
    }

    private func probe(_ bytes: UnsafeBufferPointer<UInt8>) throws(ImageHeader.ProbeError) -> ImageHeader {
        guard bytes.count >= 13 else { throw .corrupt(format, "file ends inside the screen descriptor") }
        let width = Int(bytes[6]) | Int(bytes[7]) << 8, height = Int(bytes[8]) | Int(bytes[9]) << 8
        guard width > 0, height > 0 else { throw .corrupt(format, "zero width or height") }
        var offset = 13
        if bytes[10] & 0x80 != 0 { offset += 3 << (Int(bytes[10] & 0x07) + 1) }
        var frames = 0
        var transparent = false
        walk: while offset < bytes.count {
            switch bytes[offset] {
            case 0x2C:  // image descriptor: a frame
                guard offset + 10 <= bytes.count else { throw .corrupt(format, "file ends inside frame \(frames + 1)") }
                let packed = bytes[offset + 9]
                offset += 10
                if packed & 0x80 != 0 { offset += 3 << (Int(packed & 0x07) + 1) }
                offset += 1  // LZW minimum code size
                guard offset <= bytes.count, GIFCodec.skipSubBlocks(bytes, &offset) else { throw .corrupt(format, "file ends inside frame \(frames + 1)") }
                frames += 1
            case 0x21:  // extension
                guard offset + 2 <= bytes.count else { throw .corrupt(format, "file ends inside an extension") }
                // The first frame's transparent colour: later frames' ones usually let earlier frames show through.
                if frames == 0, bytes[offset + 1] == 0xF9, offset + 4 <= bytes.count, bytes[offset + 3] & 0x01 != 0 {
                    transparent = true
                }
                offset += 2
                guard GIFCodec.skipSubBlocks(bytes, &offset) else { throw .corrupt(format, "file ends inside an extension") }
            case 0x3B:  // trailer
                break walk
            default:
                // Browsers show the frames before a block they do not know, and stop there.
                guard frames > 0 else { throw .corrupt(format, "unknown block 0x\(String(bytes[offset], radix: 16)) before the first frame") }
                break walk
            }
        }
        guard frames > 0 else { throw .corrupt(format, "no frame") }
        return ImageHeader(format: format, width: width, height: height, frameCount: frames, hasAlpha: transparent)
    }

    func decode(_ bytes: [UInt8], header: ImageHeader, maximumPixels: PixelLimit,
                maximumFrames: Int) throws(ImageDecoder.DecodeError) -> DecodedImage {
        try CodecShim.decode(bytes, header: header, maximumPixels: maximumPixels, maximumFrames: maximumFrames, ic_gif_decode)
    }

    func encode(_ rgba: ArraySlice<UInt8>, width: Int, height: Int,
                settings: ImageEncoder.Settings) throws(ImageEncoder.EncodeError) -> [UInt8] {
        try encodeAnimation(Array(rgba), width: width, height: height, frameCount: 1, delays: [0], loopCount: 1, settings: settings)
    }

    func encodeAnimation(_ frames: [UInt8], width: Int, height: Int, frameCount: Int, delays: [Int], loopCount: Int,
                         settings: ImageEncoder.Settings) throws(ImageEncoder.EncodeError) -> [UInt8] {
        let times = delays.map { UInt32(max(0, $0)) }
        return try CodecShim.encoded(format) { encoded, message, size in
            frames.withUnsafeBufferPointer { buffer in
                times.withUnsafeBufferPointer { delays in
                    ic_gif_encode(buffer.baseAddress, UInt32(width), UInt32(height), UInt32(frameCount), delays.baseAddress,
                                  Int32(loopCount), encoded, message, size)
                }
            }
        }
    }
}
