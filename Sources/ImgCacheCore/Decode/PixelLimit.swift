/// The most pixels (width × height) an image may have to be accepted: the
/// defence against decompression bombs, checked from the header before any
/// pixel is decoded (`--max-pixels`).
public struct PixelLimit: Equatable, Sendable, CustomStringConvertible {
    public let pixels: Int

    /// 100 megapixels: a 10000 × 10000 photo passes, a 50000 × 50000 bomb does not.
    public static let standard = PixelLimit(pixels: 100_000_000)

    public init(pixels: Int) {
        self.pixels = pixels
    }

    /// Reads `100M`, `2.5M`, `40k`, `1G`, a plain count, or a size `WxH`.
    public init(parsing text: String) throws(ValueError) {
        let parts = text.lowercased().split(separator: "x", omittingEmptySubsequences: false)
        if parts.count == 2 {
            guard let width = Int(parts[0]), let height = Int(parts[1]), width > 0, height > 0,
                  width.multipliedReportingOverflow(by: height).overflow == false else {
                throw .invalid("expected WIDTHxHEIGHT with whole numbers above 0")
            }
            self.pixels = width * height
            return
        }
        let multipliers: [Character: Double] = ["k": 1e3, "m": 1e6, "g": 1e9]
        var number = Substring(text)
        var multiplier = 1.0
        if let last = number.last?.lowercased().first, let found = multipliers[last] {
            multiplier = found
            number = number.dropLast()
        }
        guard let value = Double(number), value.isFinite, (value * multiplier).rounded() >= 1, value * multiplier < 1e15 else {
            throw .invalid("expected a pixel count of at least 1 (100M, 2.5M, 40k) or WIDTHxHEIGHT")
        }
        self.pixels = Int((value * multiplier).rounded())
    }

    /// Whether decoding an image with `header` (one frame, with the images it embeds) is within the limit.
    public func allows(_ header: ImageHeader) -> Bool {
        header.pixelsToDecode <= pixels
    }

    /// What is counted against the limit, as people read it: `W×H pixels`, `N frames of W×H
    /// pixels (X in all)`, `a W×H SVG with N embedded images (X in all)`.
    public static func counted(width: Int, height: Int, frames: Int = 1, embedded: ImageHeader.EmbeddedImages? = nil) -> String {
        let (area, wide) = width.multipliedReportingOverflow(by: height)
        if let embedded, embedded.count > 0 {
            let (total, over) = area.addingReportingOverflow(embedded.pixels)
            let inAll = wide || over || embedded.pixels == Int.max ? "more than can be counted" : "\(PixelLimit(pixels: total)) in all"
            return "a \(width)×\(height) SVG with \(Plural.count(embedded.count, "embedded image")) (\(inAll))"
        }
        guard frames > 1 else { return "\(width)×\(height) pixels" }
        let (total, long) = area.multipliedReportingOverflow(by: frames)
        let inAll = wide || long ? "more than can be counted" : "\(PixelLimit(pixels: total)) in all"
        return "\(frames) frames of \(width)×\(height) pixels (\(inAll))"
    }

    /// Whether an image of `width` × `height` is within the limit.
    public func allows(width: Int, height: Int) -> Bool {
        let (product, overflow) = width.multipliedReportingOverflow(by: height)
        return !overflow && product <= pixels
    }

    /// `100 megapixels`, `2.5 megapixels`, `100.04 megapixels`, `40000 pixels`: to the hundredth,
    /// so that a count just over a limit does not read as the limit.
    public var description: String {
        guard pixels >= 1_000_000 else { return "\(pixels) pixels" }
        let hundredths = Int((Double(pixels) / 10_000).rounded())
        let whole = hundredths / 100, fraction = hundredths % 100
        guard fraction != 0 else { return "\(whole) megapixels" }
        return fraction % 10 == 0 ? "\(whole).\(fraction / 10) megapixels" : "\(whole).\(fraction < 10 ? "0" : "")\(fraction) megapixels"
    }
}
