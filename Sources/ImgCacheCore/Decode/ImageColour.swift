import CImgCacheShims

/// What colours a decoded image's pixels are in, as its file said: an
/// embedded ICC profile, an AVIF/HEIF colour description (ITU-T H.273 code
/// points), or nothing, which the web takes as sRGB. Thumbnails and
/// conversions are written in sRGB: `ImageColour.toSRGB` turns the pixels
/// there through lcms2, the profile is not carried over.
public enum ImageColour: Equatable, Sendable {
    case sRGB
    case profile([UInt8])
    case coded(primaries: Int, transfer: Int)

    /// The description a C decoder left beside its pixels.
    init(_ image: ic_decoded_image) {
        if let icc = image.icc, image.icc_size > 0 {
            self = .profile([UInt8](UnsafeBufferPointer(start: icc, count: image.icc_size)))
        } else if ImageColour.isSRGB(primaries: Int(image.color_primaries), transfer: Int(image.transfer_characteristics)) {
            self = .sRGB
        } else {
            self = .coded(primaries: Int(image.color_primaries), transfer: Int(image.transfer_characteristics))
        }
    }

    /// BT.709 primaries (or unspecified) with the sRGB, BT.709 or unspecified curve: sRGB as browsers show it.
    static func isSRGB(primaries: Int, transfer: Int) -> Bool {
        [0, 1, 2].contains(primaries) && [0, 1, 2, 6, 13, 14, 15].contains(transfer)
    }

    /// Why colours could not be turned into sRGB.
    public enum ConversionError: Error, Equatable, Sendable {
        case libraryMissing(String)
    }

    /// `rgba` (frames one after another) turned into sRGB in place. A profile
    /// lcms2 cannot use leaves the pixels as they are, as browsers do.
    public func toSRGB(_ rgba: inout [UInt8]) throws(ConversionError) {
        let count = UInt64(rgba.count / 4)
        var buffer = [CChar](repeating: 0, count: 256)
        let status: Int32
        switch self {
        case .sRGB: return
        case .profile(let icc):
            status = rgba.withUnsafeMutableBufferPointer { pixels in
                icc.withUnsafeBufferPointer { profile in
                    ic_color_icc_to_srgb(pixels.baseAddress, count, profile.baseAddress, profile.count, &buffer, buffer.count)
                }
            }
        case .coded(let primaries, let transfer):
            status = rgba.withUnsafeMutableBufferPointer { pixels in
                ic_color_primaries_to_srgb(pixels.baseAddress, count, Int32(primaries), Int32(transfer), &buffer, buffer.count)
            }
        }
        if status < 0 { throw .libraryMissing(CodecShim.message(buffer)) }
    }
}
