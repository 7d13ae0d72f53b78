import Foundation
@testable import ImgCacheCore
import Testing

/// The thumbnail geometry against a model of the documented rules, over a
/// seeded random sweep: stored size, EXIF orientation 1–8, box (`WxH`, `Wx`,
/// `xH`), fit (inside, cover, contain, fill), `--upscale`, and the "already
/// fits" shortcut. Each case goes through the real transform (decode-ready
/// pixels in, PNG out): width, height and which source corner lands in each
/// output corner are compared with the model's.
@Suite struct GeometrySweepTests {
    /// A corner of the source as stored, by the colour its quadrant is painted.
    enum Corner: Equatable { case topLeft, topRight, bottomLeft, bottomRight, padding }

    static let colours: [(Corner, [UInt8])] = [(.topLeft, [255, 0, 0, 255]), (.topRight, [0, 255, 0, 255]),
                                               (.bottomLeft, [0, 0, 255, 255]), (.bottomRight, [255, 255, 255, 255])]

    /// The stored pixel an upright pixel (x, y) shows, for an image stored `width` x `height`
    /// (EXIF's eight orientations, as viewers apply them).
    static func stored(x: Int, y: Int, width: Int, height: Int, orientation: Int) -> (Int, Int) {
        switch orientation {
        case 2: return (width - 1 - x, y)
        case 3: return (width - 1 - x, height - 1 - y)
        case 4: return (x, height - 1 - y)
        case 5: return (y, x)
        case 6: return (y, height - 1 - x)
        case 7: return (width - 1 - y, height - 1 - x)
        case 8: return (width - 1 - y, x)
        default: return (x, y)
        }
    }

    /// The model: the output's size, and what shows in its corners (top-left, top-right, bottom-left, bottom-right).
    static func model(width: Int, height: Int, orientation: Int, box: (Int?, Int?), fit: ImageTransform.Fit,
                      upscale: Bool) -> (size: (Int, Int), corners: [Corner]) {
        let shown = orientation >= 5 ? (height, width) : (width, height)
        let complete = box.0 != nil && box.1 != nil
        var scaled: (Int, Int)
        if fit == .fill && complete {
            scaled = (box.0!, box.1!)
        } else {
            let across = box.0.map { Double($0) / Double(shown.0) }, down = box.1.map { Double($0) / Double(shown.1) }
            var scale: Double
            switch (across, down) {
            case let (a?, d?): scale = fit == .cover ? max(a, d) : min(a, d)
            case let (a?, nil): scale = a
            case let (nil, d?): scale = d
            default: scale = 1
            }
            if !upscale { scale = min(1, scale) }
            scaled = (max(1, Int((Double(shown.0) * scale).rounded())), max(1, Int((Double(shown.1) * scale).rounded())))
            if fit != .cover { scaled = (min(scaled.0, box.0 ?? .max), min(scaled.1, box.1 ?? .max)) }
        }
        var canvas = scaled
        // Cover: the box, or the largest of its shape inside an image too small for it (not enlarged).
        if complete && fit == .cover {
            if scaled.0 >= box.0! && scaled.1 >= box.1! {
                canvas = (box.0!, box.1!)
            } else {
                let ratio = min(Double(scaled.0) / Double(box.0!), Double(scaled.1) / Double(box.1!))
                canvas = (max(1, min(scaled.0, Int((Double(box.0!) * ratio).rounded()))), max(1, min(scaled.1, Int((Double(box.1!) * ratio).rounded()))))
            }
        }
        // Contain: the box, or the smallest of its shape around an image that leaves room on every side (not enlarged).
        if complete && fit == .contain {
            if scaled.0 < box.0! && scaled.1 < box.1! {
                let ratio = max(Double(scaled.0) / Double(box.0!), Double(scaled.1) / Double(box.1!))
                canvas = (min(box.0!, max(scaled.0, Int((Double(box.0!) * ratio).rounded()))),
                          min(box.1!, max(scaled.1, Int((Double(box.1!) * ratio).rounded()))))
            } else {
                canvas = (box.0!, box.1!)
            }
        }
        // Where the scaled picture sits on the canvas: centred (cropped when negative, padded when positive).
        let offset = ((canvas.0 - scaled.0) / 2, (canvas.1 - scaled.1) / 2)
        func corner(_ cx: Int, _ cy: Int) -> Corner {
            let sx = cx - offset.0, sy = cy - offset.1
            guard sx >= 0, sy >= 0, sx < scaled.0, sy < scaled.1 else { return .padding }
            // The upright pixel under it, then the stored one.
            let ux = min(shown.0 - 1, Int(Double(sx) * Double(shown.0) / Double(scaled.0)))
            let uy = min(shown.1 - 1, Int(Double(sy) * Double(shown.1) / Double(scaled.1)))
            let (x, y) = stored(x: ux, y: uy, width: width, height: height, orientation: orientation)
            switch (x < width / 2, y < height / 2) {
            case (true, true): return .topLeft
            case (false, true): return .topRight
            case (true, false): return .bottomLeft
            case (false, false): return .bottomRight
            }
        }
        return (canvas, [corner(0, 0), corner(canvas.0 - 1, 0), corner(0, canvas.1 - 1), corner(canvas.0 - 1, canvas.1 - 1)])
    }

    @Test func theRealTransformMatchesTheModelOverAThousandsOfCases() throws {
        var state: UInt64 = 0x5DEE_CE66_D1CE_4E5B
        func next(_ bound: Int) -> Int {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            return Int(state % UInt64(bound))
        }
        var checked = 0, shortcuts = 0
        for _ in 0..<3000 {
            let width = 2 * (1 + next(30)), height = 2 * (1 + next(30)), orientation = 1 + next(8)
            let kind = next(3)
            let box: (Int?, Int?) = (kind == 2 ? nil : 1 + next(80), kind == 1 ? nil : 1 + next(80))
            let fit = ImageTransform.Fit.allCases[next(4)], upscale = next(2) == 1
            var transform = ImageTransform(thumbnail: ImageTransform.BoxSize(width: box.0, height: box.1), format: .png)
            transform.fit = fit
            transform.upscale = upscale
            let expected = Self.model(width: width, height: height, orientation: orientation, box: box, fit: fit, upscale: upscale)
            let label = "\(width)x\(height) o\(orientation) \(transform.thumbnail!) \(fit) upscale \(upscale)"
            // The shortcut: the image as served, only when nothing would change.
            let header = ImageHeader(format: .png, width: width, height: height, frameCount: 1, orientation: orientation)
            if transform.keepsAsServed(header) {
                let shown = orientation >= 5 ? (height, width) : (width, height)
                #expect(expected.size == shown && expected.corners.allSatisfy { $0 != .padding }, "\(label): kept as served")
                shortcuts += 1
                continue
            }
            var pixels = [UInt8](repeating: 0, count: width * height * 4)
            for y in 0..<height {
                for x in 0..<width {
                    let quadrant = (x < width / 2 ? 0 : 1) + (y < height / 2 ? 0 : 2)
                    pixels.replaceSubrange((y * width + x) * 4..<(y * width + x) * 4 + 4, with: Self.colours[quadrant].1)
                }
            }
            let source = DecodedImage(format: .png, width: width, height: height, frameCount: 1, pixels: pixels, delays: [0],
                                      loopCount: nil, orientation: orientation)
            let output = try transform.apply(to: source, shown: header.uprightSize)
            #expect(output.width == expected.size.0 && output.height == expected.size.1,
                    "\(label): \(output.width)x\(output.height), model \(expected.size)")
            guard output.width == expected.size.0, output.height == expected.size.1 else { continue }
            // Corners are told apart only where each output pixel covers one quadrant: two pixels a side at least.
            let scaledAtLeastTwo = output.width >= 4 && output.height >= 4
            guard scaledAtLeastTwo else { continue }
            let image = try ImageDecoder.decode(output.bytes)
            let found = [(0, 0), (image.width - 1, 0), (0, image.height - 1), (image.width - 1, image.height - 1)].map { x, y -> Corner in
                let at = (y * image.width + x) * 4
                let pixel = Array(image.pixels[at..<at + 4])
                if pixel[3] == 0 { return .padding }
                return Self.colours.first { $0.1 == pixel }?.0 ?? .padding
            }
            // A corner whose output pixel straddles two quadrants (a scale that puts the middle inside it) reads as
            // neither colour: only clean corners are held to the model.
            for (index, corner) in found.enumerated() where corner != .padding || expected.corners[index] == .padding {
                #expect(corner == expected.corners[index], "\(label): corner \(index) shows \(corner), model \(expected.corners[index])")
            }
            checked += 1
        }
        #expect(checked > 1500 && shortcuts > 50, "\(checked) cases checked, \(shortcuts) shortcuts")
    }

    /// `--thumbnail` lays out first, then `--scale-down` shrinks the result within its pixels
    /// (USAGE.md: `--thumbnail 2000x --scale-down=1M` gives at most a megapixel).
    @Test func scaleDownBoundsAThumbnailAfterItsLayout() {
        var transform = ImageTransform(thumbnail: .init(width: 2000, height: nil), scaleDownLimit: PixelLimit(pixels: 1_000_000))
        let layout = transform.layout(width: 4000, height: 3000)
        #expect(layout.canvas.width * layout.canvas.height <= 1_000_000 && layout.canvas.width > 1100, "\(layout.canvas)")
        #expect(abs(Double(layout.canvas.width) / Double(layout.canvas.height) - 4.0 / 3.0) < 0.01)
        transform.scaleDownLimit = nil
        #expect(transform.layout(width: 4000, height: 3000).canvas == (2000, 1500))
    }
}
