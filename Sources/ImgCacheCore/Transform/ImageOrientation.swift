/// Turns pixels upright by their EXIF orientation (1–8), before they are
/// resized and re-encoded: the encoded copy has no EXIF to tell a viewer.
public enum ImageOrientation {
    /// `rgba` (`width` × `height`) turned as `orientation` asks, with its new size.
    public static func apply(_ rgba: ArraySlice<UInt8>, width: Int, height: Int,
                             orientation: Int) -> (pixels: [UInt8], width: Int, height: Int) {
        guard (2...8).contains(orientation) else { return (Array(rgba), width, height) }
        let swaps = orientation >= 5  // 5-8 turn by a quarter: width and height trade places
        let (outWidth, outHeight) = swaps ? (height, width) : (width, height)
        var result = [UInt8](repeating: 0, count: rgba.count)
        rgba.withUnsafeBufferPointer { source in
            result.withUnsafeMutableBufferPointer { target in
                for y in 0..<outHeight {
                    for x in 0..<outWidth {
                        // The source pixel shown at (x, y) once upright.
                        let (sx, sy): (Int, Int)
                        switch orientation {
                        case 2: (sx, sy) = (width - 1 - x, y)
                        case 3: (sx, sy) = (width - 1 - x, height - 1 - y)
                        case 4: (sx, sy) = (x, height - 1 - y)
                        case 5: (sx, sy) = (y, x)
                        case 6: (sx, sy) = (y, height - 1 - x)
                        case 7: (sx, sy) = (width - 1 - y, height - 1 - x)
                        default: (sx, sy) = (width - 1 - y, x)  // 8
                        }
                        let from = (sy * width + sx) * 4, to = (y * outWidth + x) * 4
                        target[to] = source[from]
                        target[to + 1] = source[from + 1]
                        target[to + 2] = source[from + 2]
                        target[to + 3] = source[from + 3]
                    }
                }
            }
        }
        return (result, outWidth, outHeight)
    }
}
