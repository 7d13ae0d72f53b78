/// Downscales RGBA8 frames by area averaging: each output pixel is the mean of
/// the source area it covers, fractions of edge pixels weighted by their
/// coverage (a box filter at the exact scale, not nearest neighbour). Colour is
/// averaged premultiplied by alpha, so transparent pixels do not bleed their
/// hidden colour into the edges.
public enum ImageResizer {
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

    /// For each output index, the source indices it covers and their weights (summing to 1), in
    /// flat tables: output `i` covers `count[i]` source pixels from `first[i]`, weighted by
    /// `weights[offset[i] ..< offset[i] + count[i]]`.
    struct Coverage {
        var first: [Int] = []
        var count: [Int] = []
        var offset: [Int] = []
        var weights: [Float] = []

        init(source: Int, target: Int) {
            let step = Double(source) / Double(target)
            first.reserveCapacity(target)
            count.reserveCapacity(target)
            offset.reserveCapacity(target)
            for index in 0..<target {
                let start = Double(index) * step, end = Double(index + 1) * step
                let firstPixel = Int(start.rounded(.down))
                let lastPixel = min(source - 1, Int((end - 1e-9).rounded(.down)))
                first.append(firstPixel)
                count.append(lastPixel - firstPixel + 1)
                offset.append(weights.count)
                for pixel in firstPixel...lastPixel {
                    let covered = min(end, Double(pixel + 1)) - max(start, Double(pixel))
                    weights.append(Float(covered / step))
                }
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
        // Source rows are shrunk horizontally (premultiplied, as floats) as the output rows need them,
        // into a ring that holds as many as one output row spans: a slight shrink of a big image
        // never holds a float copy of it.
        let rowLength = toWidth * 4
        let ringRows = max(1, rows.count.max() ?? 1)
        var ring = [Float](repeating: 0, count: ringRows * rowLength)
        var result = [UInt8](repeating: 0, count: toWidth * toHeight * 4)
        var sums = [Float](repeating: 0, count: rowLength)
        var shrunkRows = 0  // source rows [0, shrunkRows) have been shrunk; the last `ringRows` of them are in the ring
        rgba.withUnsafeBufferPointer { source in
            ring.withUnsafeMutableBufferPointer { ring in
                result.withUnsafeMutableBufferPointer { target in
                    sums.withUnsafeMutableBufferPointer { sum in
                        for y in 0..<toHeight {
                            let last = rows.first[y] + rows.count[y]
                            while shrunkRows < last {
                                shrinkRow(shrunkRows, of: source, width: width, columns: columns,
                                          into: ring, at: (shrunkRows % ringRows) * rowLength)
                                shrunkRows += 1
                            }
                            // Pass 2: the output row from the source rows it covers, un-premultiplied and
                            // rounded (half up: all values are positive).
                            for index in 0..<rowLength { sum[index] = 0 }
                            let base = rows.offset[y]
                            for tap in 0..<rows.count[y] {
                                let weight = rows.weights[base + tap]
                                let row = ((rows.first[y] + tap) % ringRows) * rowLength
                                for index in 0..<rowLength { sum[index] += ring[row + index] * weight }
                            }
                            let out = y * rowLength
                            for x in stride(from: 0, to: rowLength, by: 4) {
                                let a = sum[x + 3]
                                guard a > 0.001 else { continue }  // fully transparent: (0, 0, 0, 0)
                                let inverse = 1 / a
                                target[out + x] = UInt8(Int(min(255, sum[x] * inverse + 0.5)))
                                target[out + x + 1] = UInt8(Int(min(255, sum[x + 1] * inverse + 0.5)))
                                target[out + x + 2] = UInt8(Int(min(255, sum[x + 2] * inverse + 0.5)))
                                target[out + x + 3] = UInt8(Int(min(255, a + 0.5)))
                            }
                        }
                    }
                }
            }
        }
        return result
    }

    /// Pass 1 for source row `y`: shrunk horizontally, premultiplied, into `target` at `start`.
    private static func shrinkRow(_ y: Int, of source: UnsafeBufferPointer<UInt8>, width: Int, columns: Coverage,
                                  into target: UnsafeMutableBufferPointer<Float>, at start: Int) {
        let sourceRow = y * width * 4
        let raw = UnsafeRawBufferPointer(source)
        columns.first.withUnsafeBufferPointer { first in
            columns.count.withUnsafeBufferPointer { count in
                columns.offset.withUnsafeBufferPointer { offset in
                    columns.weights.withUnsafeBufferPointer { weights in
                        for x in 0..<first.count {
                            // Red, green and blue premultiplied, and alpha, four lanes at once.
                            var sum = SIMD4<Float>()
                            var pixel = sourceRow + first[x] * 4
                            let base = offset[x]
                            for tap in 0..<count[x] {
                                // One load of the pixel's four bytes, widened to four floats at once.
                                let bytes = raw.loadUnaligned(fromByteOffset: pixel, as: SIMD4<UInt8>.self)
                                var colour = SIMD4<Float>(SIMD4<Int32>(truncatingIfNeeded: bytes))
                                let alpha = colour[3] * weights[base + tap]
                                colour[3] = 1
                                sum += colour * alpha
                                pixel += 4
                            }
                            let out = start + x * 4
                            target[out] = sum[0]
                            target[out + 1] = sum[1]
                            target[out + 2] = sum[2]
                            target[out + 3] = sum[3]
                        }
                    }
                }
            }
        }
    }
}
