@testable import ImgCacheCore
import Testing

/// Hard edges of alpha stay where they are in a thumbnail, whatever the source format: a column of
/// the thumbnail that covers only clear pixels is clear, one that covers only opaque ones is opaque
/// (libwebp's scaled decode weighed pixels across the edge: a clear column came out partly opaque).
@Suite struct AlphaEdgeTests {
    @Test(arguments: [ImageFormat.webp, .png])
    func aThumbnailKeepsHardEdgesOfAlpha(format: ImageFormat) throws {
        // 96x64: four bands of 24 columns, alpha 255, 128, 0 and 40.
        let (width, height) = (96, 64)
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let at = (y * width + x) * 4
                pixels[at] = 200
                pixels[at + 1] = 50
                pixels[at + 3] = [255, 128, 0, 40][x / 24]
            }
        }
        let bytes = try ImageEncoder.encode(pixels[...], width: width, height: height, settings: ImageEncoder.Settings(format: format, quality: 100))
        let header = try ImageHeader.probe(bytes)
        let transform = ImageTransform(thumbnail: .init(width: 40, height: 40), format: .png)
        let decoded = try ImageTransform.decodeSource(bytes, header: header, for: [transform], maximumPixels: .standard)
        let output = try transform.apply(to: decoded, shown: ImageTransform.shownSize(of: header)) { _ in }
        let thumbnail = try ImageDecoder.decode(output.bytes)
        #expect(thumbnail.width == 40)
        // Output column x covers source columns x*2.4 ..< (x+1)*2.4: those wholly inside a band have its alpha.
        for x in 0..<40 {
            let from = Double(x) * 2.4, to = Double(x + 1) * 2.4
            let band = Int(from) / 24
            guard Int(to.nextDown) / 24 == band else { continue }
            let alpha = Int(thumbnail.pixels[(10 * 40 + x) * 4 + 3])
            #expect(abs(alpha - [255, 128, 0, 40][band]) <= 1, "\(format) column \(x): alpha \(alpha)")
        }
    }
}
