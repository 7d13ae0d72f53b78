import Foundation
@testable import ImgCacheCore
import Testing

@Suite struct OrientationTests {
    /// A 3x2 image whose pixels are numbered 1...6 in their red channel.
    let pixels: [UInt8] = (1...6).flatMap { [UInt8($0), 0, 0, 255] }

    func reds(_ result: (pixels: [UInt8], width: Int, height: Int)) -> [UInt8] {
        stride(from: 0, to: result.pixels.count, by: 4).map { result.pixels[$0] }
    }

    @Test func everyOrientationTurnsTheImageUpright() {
        // 1 2 3
        // 4 5 6
        let expected: [Int: (Int, Int, [UInt8])] = [
            1: (3, 2, [1, 2, 3, 4, 5, 6]), 2: (3, 2, [3, 2, 1, 6, 5, 4]), 3: (3, 2, [6, 5, 4, 3, 2, 1]),
            4: (3, 2, [4, 5, 6, 1, 2, 3]), 5: (2, 3, [1, 4, 2, 5, 3, 6]), 6: (2, 3, [4, 1, 5, 2, 6, 3]),
            7: (2, 3, [6, 3, 5, 2, 4, 1]), 8: (2, 3, [3, 6, 2, 5, 1, 4]),
        ]
        for (orientation, (width, height, order)) in expected {
            let result = ImageOrientation.apply(pixels[...], width: 3, height: 2, orientation: orientation)
            #expect(result.width == width && result.height == height, "\(orientation)")
            #expect(reds(result) == order, "\(orientation)")
        }
    }
}
