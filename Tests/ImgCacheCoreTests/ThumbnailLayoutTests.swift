import ImgCacheCore
import Testing

/// `--fit outside` against a model of img2dataset's `keep_ratio`: the short side meets the box, the
/// proportions are kept, nothing is cropped or padded, nothing is enlarged unless asked.
@Suite struct ThumbnailLayoutTests {
    @Test func outsideFitsTheShortSideToTheBoxOverManySizes() {
        let box = ImageTransform.BoxSize(width: 256, height: 256)
        for width in stride(from: 1, through: 3000, by: 97) {
            for height in stride(from: 1, through: 3000, by: 89) {
                var transform = ImageTransform(thumbnail: box)
                transform.fit = .outside
                let layout = transform.layout(width: width, height: height)
                let scale = min(1, max(256 / Double(width), 256 / Double(height)))
                let expected = (max(1, Int((Double(width) * scale).rounded())), max(1, Int((Double(height) * scale).rounded())))
                #expect(layout.scaled == expected && layout.canvas == expected && layout.offset == (0, 0), "\(width)x\(height)")
                if width >= 256 && height >= 256 { #expect(min(layout.scaled.width, layout.scaled.height) == 256, "\(width)x\(height)") }
                transform.upscale = true
                let enlarged = transform.layout(width: width, height: height)
                #expect(min(enlarged.scaled.width, enlarged.scaled.height) == 256, "\(width)x\(height) upscaled")
            }
        }
    }
}

/// Every size of one cover box shape keeps that shape, the image too small for a box included
/// (not enlarged, it is cropped to the box's shape): a srcset of them never switches crops.
@Suite struct CoverShapeTests {
    @Test func anImageSmallerThanTheBoxIsCroppedToTheBoxsShape() {
        for (width, height) in [(200, 150), (150, 200), (100, 100), (641, 100), (3000, 2000)] {
            for box in [(160, 90), (320, 180), (640, 360), (375, 375), (90, 160)] {
                var transform = ImageTransform(thumbnail: .init(width: box.0, height: box.1), format: .webp)
                transform.fit = .cover
                let canvas = transform.layout(width: width, height: height).canvas
                #expect(canvas.width <= box.0 && canvas.height <= box.1 && canvas.width <= width && canvas.height <= height,
                        "\(width)x\(height) in \(box): \(canvas)")
                // The box's shape, to a pixel of rounding.
                let shapeError = abs(Double(canvas.width) * Double(box.1) - Double(canvas.height) * Double(box.0)) / Double(box.1)
                #expect(shapeError <= 1, "\(width)x\(height) in \(box): \(canvas)")
            }
        }
    }
}

/// Every size of one contain box shape shows an image too small for the boxes at one size: padded to
/// the smallest picture of the box's shape around it (not enlarged), the same for each box, so a
/// srcset of them never shows it smaller at a higher density.
@Suite struct ContainShapeTests {
    @Test func anImageSmallerThanTheBoxesIsPaddedToOneCanvasOfTheirShape() {
        for (width, height) in [(200, 150), (150, 200), (100, 100), (300, 40), (17, 311)] {
            for boxes in [[(320, 180), (640, 360), (1280, 720)], [(400, 400), (800, 800)], [(360, 640), (720, 1280)]]
            where width < boxes[0].0 && height < boxes[0].1 {
                let canvases = boxes.map { box -> (width: Int, height: Int) in
                    var transform = ImageTransform(thumbnail: .init(width: box.0, height: box.1), format: .webp)
                    transform.fit = .contain
                    let layout = transform.layout(width: width, height: height)
                    #expect(layout.scaled == (width, height), "\(width)x\(height) in \(box): enlarged to \(layout.scaled)")
                    return layout.canvas
                }
                for (canvas, box) in zip(canvases, boxes) {
                    #expect(canvas == canvases[0], "\(width)x\(height): \(canvases)")
                    #expect(canvas.width >= width && canvas.height >= height && canvas.width <= box.0 && canvas.height <= box.1,
                            "\(width)x\(height) in \(box): \(canvas)")
                    let shapeError = abs(Double(canvas.width) * Double(box.1) - Double(canvas.height) * Double(box.0)) / Double(box.1)
                    #expect(shapeError <= 1, "\(width)x\(height) in \(box): \(canvas)")
                }
            }
        }
        // An image that meets a side of the box is padded to the box itself, as before.
        var transform = ImageTransform(thumbnail: .init(width: 320, height: 180), format: .webp)
        transform.fit = .contain
        #expect(transform.layout(width: 640, height: 200).canvas == (320, 180))
    }
}
