/// Downscales RGBA8 frames by area averaging: each output pixel is the mean of
/// the source area it covers, fractions of edge pixels weighted by their
/// coverage (a box filter at the exact scale, not nearest neighbour). Colour is
/// averaged premultiplied by alpha, so transparent pixels do not bleed their
/// hidden colour into the edges.
public enum ImageResizer {
    /// The largest size with the image's aspect ratio that fits inside
    /// `boxWidth` × `boxHeight`, never larger than the image (no upscaling).
    public static func fittedSize(width: Int, height: Int, boxWidth: Int, boxHeight: Int) -> (width: Int, height: Int) {
        guard width > boxWidth || height > boxHeight else { return (width, height) }
        let scale = min(Double(boxWidth) / Double(width), Double(boxHeight) / Double(height))
        let fitted = (max(1, min(boxWidth, Int((Double(width) * scale).rounded()))),
                      max(1, min(boxHeight, Int((Double(height) * scale).rounded()))))
        return fitted
    }

    /// `rgba` (`width` x `height`) on a `canvasWidth` x `canvasHeight` picture
    /// of `fill`, its corner at (`x`, `y`): negative offsets crop it.
    public static func placed(_ rgba: [UInt8], width: Int, height: Int, canvasWidth: Int, canvasHeight: Int,
                              x: Int, y: Int, fill: [UInt8]) -> [UInt8] {
        var canvas = [UInt8](repeating: 0, count: canvasWidth * canvasHeight * 4)
        if fill != [0, 0, 0, 0] {
            for pixel in 0..<(canvasWidth * canvasHeight) { canvas.replaceSubrange(pixel * 4..<pixel * 4 + 4, with: fill) }
        }
        let left = max(0, x), right = min(canvasWidth, x + width)
        guard left < right else { return canvas }
        for row in max(0, y)..<min(canvasHeight, y + height) {
            let source = ((row - y) * width + (left - x)) * 4
            let target = (row * canvasWidth + left) * 4
            canvas.replaceSubrange(target..<target + (right - left) * 4, with: rgba[source..<source + (right - left) * 4])
        }
        return canvas
    }

    /// For each output index, the source indices it covers and their weights (summing to 1).
    struct Coverage {
        var first: [Int] = []
        var weights: [[Float]] = []

        init(source: Int, target: Int) {
            let step = Double(source) / Double(target)
            for index in 0..<target {
                let start = Double(index) * step, end = Double(index + 1) * step
                let firstPixel = Int(start.rounded(.down))
                let lastPixel = min(source - 1, Int((end - 1e-9).rounded(.down)))
                var row: [Float] = []
                for pixel in firstPixel...lastPixel {
                    let covered = min(end, Double(pixel + 1)) - max(start, Double(pixel))
                    row.append(Float(covered / step))
                }
                first.append(firstPixel)
                weights.append(row)
            }
        }
    }

    /// `rgba` is `width` × `height` pixels; the result is `toWidth` × `toHeight`
    /// (a side made longer, `--upscale` or `--fit fill`, takes each source pixel
    /// over the output pixels it spans, blending where two meet).
    public static func resize(_ rgba: ArraySlice<UInt8>, width: Int, height: Int, toWidth: Int, toHeight: Int) -> [UInt8] {
        precondition(rgba.count == width * height * 4 && toWidth > 0 && toHeight > 0)
        if toWidth == width && toHeight == height { return Array(rgba) }
        let columns = Coverage(source: width, target: toWidth)
        let rows = Coverage(source: height, target: toHeight)
        // Pass 1: each source row shrunk horizontally, premultiplied, as floats.
        var horizontal = [Float](repeating: 0, count: toWidth * height * 4)
        rgba.withUnsafeBufferPointer { source in
            horizontal.withUnsafeMutableBufferPointer { target in
                for y in 0..<height {
                    let sourceRow = y * width * 4, targetRow = y * toWidth * 4
                    for x in 0..<toWidth {
                        var r: Float = 0, g: Float = 0, b: Float = 0, a: Float = 0
                        let first = columns.first[x]
                        for (offset, weight) in columns.weights[x].enumerated() {
                            let pixel = sourceRow + (first + offset) * 4
                            let alpha = Float(source[pixel + 3]) * weight
                            r += Float(source[pixel]) * alpha
                            g += Float(source[pixel + 1]) * alpha
                            b += Float(source[pixel + 2]) * alpha
                            a += alpha
                        }
                        let out = targetRow + x * 4
                        target[out] = r
                        target[out + 1] = g
                        target[out + 2] = b
                        target[out + 3] = a
                    }
                }
            }
        }
        // Pass 2: columns shrunk vertically, then un-premultiplied and rounded.
        var result = [UInt8](repeating: 0, count: toWidth * toHeight * 4)
        horizontal.withUnsafeBufferPointer { source in
            result.withUnsafeMutableBufferPointer { target in
                for y in 0..<toHeight {
                    let first = rows.first[y], weights = rows.weights[y]
                    for x in 0..<toWidth {
                        var r: Float = 0, g: Float = 0, b: Float = 0, a: Float = 0
                        for (offset, weight) in weights.enumerated() {
                            let pixel = ((first + offset) * toWidth + x) * 4
                            r += source[pixel] * weight
                            g += source[pixel + 1] * weight
                            b += source[pixel + 2] * weight
                            a += source[pixel + 3] * weight
                        }
                        let out = (y * toWidth + x) * 4
                        guard a > 0.001 else { continue }  // fully transparent: (0, 0, 0, 0)
                        target[out] = UInt8(min(255, (r / a).rounded()))
                        target[out + 1] = UInt8(min(255, (g / a).rounded()))
                        target[out + 2] = UInt8(min(255, (b / a).rounded()))
                        target[out + 3] = UInt8(min(255, a.rounded()))
                    }
                }
            }
        }
        return result
    }
}
