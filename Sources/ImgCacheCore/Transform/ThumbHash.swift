#if canImport(Glibc)
import Glibc
#endif

/// ThumbHash (Evan Wallace's published placeholder encoding): an image of at
/// most 100x100 pixels as a DCT of its luminance, two colour-difference
/// channels and, when some pixel is not opaque, alpha, in about 25 bytes.
/// Computed in single precision in the reference encoder's order, so that the
/// bytes are the reference's for the same pixels.
public enum ThumbHash {
    /// The largest side the encoding takes.
    public static let largestSide = 100

    /// The ThumbHash of `rgba` (straight alpha, rows top to bottom), `width` x `height`, each at most 100.
    public static func encode(_ rgba: ArraySlice<UInt8>, width: Int, height: Int) -> [UInt8] {
        precondition(width >= 1 && height >= 1 && width <= largestSide && height <= largestSide && rgba.count == width * height * 4)
        let pixels = Array(rgba)
        let count = width * height
        // The average colour, weighted by alpha: what transparent pixels are composited onto.
        var averageRed: Float = 0, averageGreen: Float = 0, averageBlue: Float = 0, averageAlpha: Float = 0
        for index in 0..<count {
            let alpha = Float(pixels[index * 4 + 3]) / 255
            averageRed += alpha / 255 * Float(pixels[index * 4])
            averageGreen += alpha / 255 * Float(pixels[index * 4 + 1])
            averageBlue += alpha / 255 * Float(pixels[index * 4 + 2])
            averageAlpha += alpha
        }
        if averageAlpha > 0 {
            averageRed /= averageAlpha
            averageGreen /= averageAlpha
            averageBlue /= averageAlpha
        }
        let hasAlpha = averageAlpha < Float(count)
        // Fewer luminance terms when alpha takes room.
        let limit = hasAlpha ? 5 : 7
        let longest = Float(max(width, height))
        let luminanceX = max(1, Int((Float(limit * width) / longest).rounded()))
        let luminanceY = max(1, Int((Float(limit * height) / longest).rounded()))
        var luminance = [Float](repeating: 0, count: count)
        var yellowBlue = [Float](repeating: 0, count: count)
        var redGreen = [Float](repeating: 0, count: count)
        var opacity = [Float](repeating: 0, count: count)
        for index in 0..<count {
            let alpha = Float(pixels[index * 4 + 3]) / 255
            let red = averageRed * (1 - alpha) + alpha / 255 * Float(pixels[index * 4])
            let green = averageGreen * (1 - alpha) + alpha / 255 * Float(pixels[index * 4 + 1])
            let blue = averageBlue * (1 - alpha) + alpha / 255 * Float(pixels[index * 4 + 2])
            luminance[index] = (red + green + blue) / 3
            yellowBlue[index] = (red + green) / 2 - blue
            redGreen[index] = red - green
            opacity[index] = alpha
        }
        let l = Channel(luminance, width: width, height: height, columns: max(3, luminanceX), rows: max(3, luminanceY))
        let p = Channel(yellowBlue, width: width, height: height, columns: 3, rows: 3)
        let q = Channel(redGreen, width: width, height: height, columns: 3, rows: 3)
        let a = hasAlpha ? Channel(opacity, width: width, height: height, columns: 5, rows: 5) : nil

        let landscape = width > height
        let header24 = UInt32((63 * l.dc).rounded()) | UInt32((31.5 + 31.5 * p.dc).rounded()) << 6
            | UInt32((31.5 + 31.5 * q.dc).rounded()) << 12 | UInt32((31 * l.scale).rounded()) << 18 | (hasAlpha ? 1 << 23 : 0)
        let header16 = UInt16(landscape ? luminanceY : luminanceX) | UInt16((63 * p.scale).rounded()) << 3
            | UInt16((63 * q.scale).rounded()) << 9 | (landscape ? 1 << 15 : 0)
        var hash: [UInt8] = [UInt8(header24 & 255), UInt8(header24 >> 8 & 255), UInt8(header24 >> 16),
                             UInt8(header16 & 255), UInt8(header16 >> 8)]
        if let a { hash.append(UInt8((15 * a.dc).rounded()) | UInt8((15 * a.scale).rounded()) << 4) }
        // The varying terms, four bits each, low nibble first.
        var odd = false
        for term in l.ac + p.ac + q.ac + (a?.ac ?? []) {
            let nibble = UInt8((15 * term).rounded())
            if odd { hash[hash.count - 1] |= nibble << 4 } else { hash.append(nibble) }
            odd.toggle()
        }
        return hash
    }

    /// One channel's DCT: its constant term, and the varying ones normalised to 0...1 by their largest magnitude.
    private struct Channel {
        var dc: Float = 0
        var ac: [Float] = []
        var scale: Float = 0

        init(_ values: [Float], width: Int, height: Int, columns: Int, rows: Int) {
            var across = [Float](repeating: 0, count: width)
            for cy in 0..<rows {
                var cx = 0
                // A triangle of terms: fewer across as they go down.
                while cx * rows < columns * (rows - cy) {
                    for x in 0..<width { across[x] = cos(Float.pi / Float(width) * Float(cx) * (Float(x) + 0.5)) }
                    var sum: Float = 0
                    for y in 0..<height {
                        let down = cos(Float.pi / Float(height) * Float(cy) * (Float(y) + 0.5))
                        for x in 0..<width { sum += values[x + y * width] * across[x] * down }
                    }
                    sum /= Float(width * height)
                    if cx > 0 || cy > 0 {
                        ac.append(sum)
                        scale = max(scale, abs(sum))
                    } else {
                        dc = sum
                    }
                    cx += 1
                }
            }
            if scale > 0 { ac = ac.map { 0.5 + 0.5 / scale * $0 } }
        }
    }
}
