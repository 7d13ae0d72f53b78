/// Every pixel of an image: each frame composited onto the canvas, as RGBA8
/// (4 bytes a pixel, rows top to bottom).
public struct DecodedImage: Sendable {
    public let format: ImageFormat
    public let width: Int
    public let height: Int
    public let frameCount: Int
    /// All frames, one after another.
    public let pixels: [UInt8]
    /// Each frame's display time in milliseconds (0 for a still image).
    public let delays: [Int]
    /// Times an animation plays (0: forever); nil for a still image.
    public let loopCount: Int?
    /// The EXIF orientation (1–8) a JPEG asks for; 1 when it says nothing.
    public let orientation: Int
    /// The colours the pixels are in: sRGB unless the file says otherwise.
    public var colour: ImageColour = .sRGB

    /// The RGBA bytes of frame `index`.
    public func frame(_ index: Int) -> ArraySlice<UInt8> {
        let size = width * height * 4
        return pixels[(index * size)..<((index + 1) * size)]
    }
}

extension DecodedImage {
    /// The same image with its pixels in sRGB (itself when they already are).
    public func inSRGB() throws(ImageColour.ConversionError) -> DecodedImage {
        guard colour != .sRGB else { return self }
        var converted = pixels
        try colour.toSRGB(&converted)
        return DecodedImage(format: format, width: width, height: height, frameCount: frameCount, pixels: converted,
                            delays: delays, loopCount: loopCount, orientation: orientation)
    }
}
