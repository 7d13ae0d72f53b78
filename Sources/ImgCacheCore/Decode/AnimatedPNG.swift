import CImgCacheShims

/// An APNG's animation, which libpng does not read: its chunks walked here
/// (`acTL`, each frame's `fcTL` and its `IDAT` or `fdAT` data), each frame
/// decoded by libpng as a PNG of its own, and composited onto the canvas as
/// browsers do (blend over or replace; dispose to nothing, to transparent or
/// to the previous picture). The still an APNG shows is its first frame,
/// which is its default image only when an `fcTL` precedes the `IDAT`.
struct AnimatedPNG {
    /// One chunk: its type and where its data lies in the file.
    struct Chunk {
        let type: String
        let data: Range<Int>
    }

    /// One frame's control chunk.
    struct FrameControl: Equatable {
        let sequence: Int
        let width: Int
        let height: Int
        let x: Int
        let y: Int
        /// Display time in milliseconds.
        let delay: Int
        /// 0: none, 1: to transparent, 2: to the previous picture.
        let dispose: Int
        /// 0: replace, 1: over.
        let blend: Int
    }

    /// A frame: its control chunk and its compressed data (IDAT's, or fdAT's without their sequence numbers).
    struct Frame {
        let control: FrameControl
        var data: [Range<Int>]
    }

    let bytes: [UInt8]
    let width: Int
    let height: Int
    /// `acTL`'s frame count and plays (0: forever).
    let declaredFrames: Int
    let plays: Int
    let frames: [Frame]
    /// The chunks every frame's PNG carries: what IHDR's pixels mean (palette, transparency, colour).
    let shared: [Chunk]
    let header: Chunk

    /// The animation in `bytes`, nil for a PNG that is a still as browsers show it: no `acTL`, one
    /// after the image data or more than one (the APNG rules: then it is a plain PNG), no frame
    /// at all, or not the number its `acTL` announces (its default image is shown); a problem when
    /// its frames contradict themselves.
    init?(_ bytes: [UInt8]) throws(ImageDecoder.DecodeError) {
        guard let chunks = AnimatedPNG.chunks(bytes), let header = chunks.first, header.type == "IHDR", header.data.count >= 13 else { return nil }
        let controls = chunks.indices.filter { chunks[$0].type == "acTL" }
        let firstData = chunks.firstIndex { $0.type == "IDAT" } ?? chunks.count
        guard controls.count == 1, controls[0] < firstData, chunks[controls[0]].data.count >= 8 else { return nil }
        let control = chunks[controls[0]]
        self.bytes = bytes
        self.header = header
        width = CodecShim.bigEndian(bytes, header.data.lowerBound)
        height = CodecShim.bigEndian(bytes, header.data.lowerBound + 4)
        declaredFrames = CodecShim.bigEndian(bytes, control.data.lowerBound)
        plays = CodecShim.bigEndian(bytes, control.data.lowerBound + 4)
        var frames: [Frame] = []
        var shared: [Chunk] = []
        var sawImageData = false, defaultIsFrame = false
        for chunk in chunks {
            switch chunk.type {
            case "fcTL":
                guard chunk.data.count >= 26 else { throw .corrupt(.png, "an fcTL chunk is too short") }
                // An fcTL repeated before any data replaces the one before it (a frame without data is no frame).
                if let last = frames.last, last.data.isEmpty { frames.removeLast() }
                let at = chunk.data.lowerBound
                let denominator = Int(bytes[at + 22]) << 8 | Int(bytes[at + 23])
                let numerator = Int(bytes[at + 20]) << 8 | Int(bytes[at + 21])
                frames.append(Frame(control: FrameControl(
                    sequence: CodecShim.bigEndian(bytes, at), width: CodecShim.bigEndian(bytes, at + 4),
                    height: CodecShim.bigEndian(bytes, at + 8), x: CodecShim.bigEndian(bytes, at + 12), y: CodecShim.bigEndian(bytes, at + 16),
                    delay: numerator * 1000 / (denominator == 0 ? 100 : denominator), dispose: Int(bytes[at + 24]), blend: Int(bytes[at + 25])),
                    data: []))
            case "IDAT":
                // The default image is the first frame only when an fcTL came before it.
                if frames.count == 1, defaultIsFrame || !sawImageData {
                    frames[0].data.append(chunk.data)
                    defaultIsFrame = true
                }
                sawImageData = true
            case "fdAT":
                // One without data past its sequence number adds nothing, as in browsers.
                guard chunk.data.count > 4 else { continue }
                guard !frames.isEmpty else { throw .corrupt(.png, "an fdAT chunk comes before any fcTL") }
                frames[frames.count - 1].data.append(chunk.data.lowerBound + 4..<chunk.data.upperBound)
            case "PLTE", "tRNS", "gAMA", "cHRM", "sRGB", "iCCP", "sBIT", "cICP":
                if !sawImageData { shared.append(chunk) }
            default: break
            }
        }
        // A last fcTL without data (the file ends after it) is no frame either.
        if let last = frames.last, last.data.isEmpty { frames.removeLast() }
        // No frame at all: the default image, a still. So is an acTL whose count is not the frames
        // present (none, or a lie either way): Chromium then shows the default image, not an animation.
        guard !frames.isEmpty, declaredFrames == frames.count else { return nil }
        self.frames = frames
        self.shared = shared
        if let problem = problem { throw .corrupt(.png, problem) }
    }

    /// What contradicts itself: a frame outside the canvas, a first frame that is not the canvas,
    /// sequence numbers out of order, no frame at all. (An `acTL` whose count is not the frames
    /// present makes a still, as in Chromium: no animation to check.)
    var problem: String? {
        guard !frames.isEmpty else { return "an animation without frames" }
        var sequence = -1
        for (index, frame) in frames.enumerated() {
            let control = frame.control
            guard control.width > 0, control.height > 0, control.x >= 0, control.y >= 0,
                  control.x + control.width <= width, control.y + control.height <= height else {
                return "frame \(index + 1) (\(control.width)×\(control.height) at \(control.x),\(control.y)) lies outside the \(width)×\(height) canvas"
            }
            if index == 0, control.x != 0 || control.y != 0 || control.width != width || control.height != height {
                return "its first frame is not the whole canvas"
            }
            guard control.sequence > sequence else { return "its frames' sequence numbers are out of order" }
            sequence = control.sequence
            guard control.dispose <= 2, control.blend <= 1 else { return "frame \(index + 1) asks for an unknown dispose or blend" }
        }
        return nil
    }

    /// Every frame composited (up to `maximumFrames`; 0: all), within `maximumPixels` counting every frame.
    func decode(maximumPixels: PixelLimit, maximumFrames: Int) throws(ImageDecoder.DecodeError) -> DecodedImage {
        let count = maximumFrames == 0 ? frames.count : min(maximumFrames, frames.count)
        let area = width * height
        guard area.multipliedReportingOverflow(by: count).overflow == false, area * count <= maximumPixels.pixels else {
            throw .tooManyPixels(width: width, height: height, limit: maximumPixels, frames: count)
        }
        var canvas = [UInt8](repeating: 0, count: area * 4)
        var pixels: [UInt8] = []
        pixels.reserveCapacity(area * 4 * count)
        var delays: [Int] = []
        var colour = ImageColour.sRGB
        for (index, frame) in frames.prefix(count).enumerated() {
            let control = frame.control
            let decoded = try decodeFrame(frame)
            if index == 0 { colour = decoded.colour }
            let saved = control.dispose == 2 ? canvas : nil
            for row in 0..<control.height {
                for column in 0..<control.width {
                    let source = (row * control.width + column) * 4
                    let target = ((control.y + row) * width + control.x + column) * 4
                    let alpha = Int(decoded.pixels[source + 3])
                    if control.blend == 0 || alpha == 255 {
                        for channel in 0..<4 { canvas[target + channel] = decoded.pixels[source + channel] }
                    } else if alpha > 0 {
                        // Straight alpha, over what is there.
                        let below = Int(canvas[target + 3])
                        let outAlpha = alpha + below * (255 - alpha) / 255
                        for channel in 0..<3 {
                            let over = Int(decoded.pixels[source + channel]) * alpha
                            let under = Int(canvas[target + channel]) * below * (255 - alpha) / 255
                            canvas[target + channel] = UInt8(clamping: outAlpha == 0 ? 0 : (over + under) / outAlpha)
                        }
                        canvas[target + 3] = UInt8(clamping: outAlpha)
                    }
                }
            }
            pixels += canvas
            delays.append(control.delay)
            switch control.dispose {
            case 1:
                for row in 0..<control.height {
                    let start = ((control.y + row) * width + control.x) * 4
                    for offset in start..<start + control.width * 4 { canvas[offset] = 0 }
                }
            case 2: canvas = saved ?? canvas
            default: break
            }
        }
        // Its eXIf orientation turns every frame, as a still PNG's turns its picture.
        var image = DecodedImage(format: .png, width: width, height: height, frameCount: count, pixels: pixels, delays: delays,
                                 loopCount: count > 1 ? plays : nil, orientation: PNGCodec.exifOrientation(bytes) ?? 1)
        image.colour = colour
        return image
    }

    /// One frame as a PNG of its own (IHDR of its size, the shared chunks, its data as IDAT), through libpng.
    private func decodeFrame(_ frame: Frame) throws(ImageDecoder.DecodeError) -> DecodedImage {
        var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        var ihdr = Array(bytes[header.data])
        for (index, value) in [frame.control.width, frame.control.height].enumerated() {
            for byte in 0..<4 { ihdr[index * 4 + byte] = UInt8(truncatingIfNeeded: value >> (24 - byte * 8)) }
        }
        AnimatedPNG.append("IHDR", ihdr[...], to: &png)
        for chunk in shared { AnimatedPNG.append(chunk.type, bytes[chunk.data], to: &png) }
        var data: [UInt8] = []
        for range in frame.data { data += bytes[range] }
        AnimatedPNG.append("IDAT", data[...], to: &png)
        AnimatedPNG.append("IEND", [][...], to: &png)
        let header = ImageHeader(format: .png, width: frame.control.width, height: frame.control.height, frameCount: 1)
        return try CodecShim.decode(png, header: header, maximumPixels: PixelLimit(pixels: frame.control.width * frame.control.height),
                                    maximumFrames: 1, ic_png_decode)
    }

    private static func append(_ type: String, _ data: ArraySlice<UInt8>, to png: inout [UInt8]) {
        let length = data.count
        png += [UInt8(truncatingIfNeeded: length >> 24), UInt8(truncatingIfNeeded: length >> 16),
                UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length)]
        let start = png.count
        png += Array(type.utf8)
        png += data
        let crc = CRC32.checksum(png[start...])
        png += [UInt8(truncatingIfNeeded: crc >> 24), UInt8(truncatingIfNeeded: crc >> 16),
                UInt8(truncatingIfNeeded: crc >> 8), UInt8(truncatingIfNeeded: crc)]
    }

    /// The file's chunks up to IEND; nil when one runs past the file.
    static func chunks(_ bytes: [UInt8]) -> [Chunk]? {
        var chunks: [Chunk] = []
        var offset = 8
        while offset + 12 <= bytes.count {
            let length = CodecShim.bigEndian(bytes, offset)
            guard length >= 0, length <= bytes.count - offset - 12 else { return nil }
            let type = String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self)
            if type == "IEND" { return chunks }
            chunks.append(Chunk(type: type, data: (offset + 8)..<(offset + 8 + length)))
            offset += 12 + length
            if chunks.count > 1 << 20 { return nil }
        }
        return nil
    }
}

/// The CRC-32 of PNG chunks (and zlib, gzip): polynomial 0xEDB88320.
enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 != 0 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    static func checksum(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
}
