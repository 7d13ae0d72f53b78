/// What a page shows while an image loads, made from the decode that makes its
/// variants: its dominant colour, its ThumbHash, and a tiny WebP of it (a
/// low-quality image placeholder, inlined as a data URI).
public struct ImagePlaceholder: Equatable, Sendable {
    /// The colour most of the image is: the heaviest of 4,096 colour bins
    /// (4 bits a channel, weighted by opacity), averaged.
    public let dominantColor: RGBColor
    /// The image's ThumbHash (about 25 bytes).
    public let thumbHash: [UInt8]

    public init(dominantColor: RGBColor, thumbHash: [UInt8]) {
        self.dominantColor = dominantColor
        self.thumbHash = thumbHash
    }

    /// The longest side of the tiny preview (the LQIP).
    public static let previewSide = 32
    /// The preview's WebP quality: it is shown blurred, and stays under a kilobyte.
    public static let previewQuality = 50

    /// The placeholder of `rgba` (upright, straight alpha), at most 100 pixels a side.
    public init(of rgba: ArraySlice<UInt8>, width: Int, height: Int) {
        thumbHash = ThumbHash.encode(rgba, width: width, height: height)
        dominantColor = ImagePlaceholder.dominantColor(of: rgba)
    }

    /// The dominant colour of `rgba`; the average where nothing is opaque enough to weigh.
    static func dominantColor(of rgba: ArraySlice<UInt8>) -> RGBColor {
        var weights = [Int](repeating: 0, count: 4096)
        var sums = [Int](repeating: 0, count: 4096 * 3)
        var start = rgba.startIndex
        while start < rgba.endIndex {
            let alpha = Int(rgba[start + 3])
            if alpha > 0 {
                let red = Int(rgba[start]), green = Int(rgba[start + 1]), blue = Int(rgba[start + 2])
                let bin = (red >> 4) << 8 | (green >> 4) << 4 | blue >> 4
                weights[bin] += alpha
                sums[bin * 3] += red * alpha
                sums[bin * 3 + 1] += green * alpha
                sums[bin * 3 + 2] += blue * alpha
            }
            start += 4
        }
        // The heaviest bin; the first of equals, so the answer does not depend on anything else.
        var best = 0
        for bin in 1..<4096 where weights[bin] > weights[best] { best = bin }
        guard weights[best] > 0 else { return .black }
        let weight = weights[best]
        return RGBColor(red: UInt8((sums[best * 3] + weight / 2) / weight), green: UInt8((sums[best * 3 + 1] + weight / 2) / weight),
                        blue: UInt8((sums[best * 3 + 2] + weight / 2) / weight))
    }

    /// Whether some pixel is not opaque (the ThumbHash says so: bit 23 of its header).
    public var hasAlpha: Bool { thumbHash.count > 2 && thumbHash[2] & 0x80 != 0 }

    /// `#rrggbb` and the ThumbHash in base64, as metadata and JSON hold them.
    public var thumbHashBase64: String { Base64.encoded(thumbHash) }
}
