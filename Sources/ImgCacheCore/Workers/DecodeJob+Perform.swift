extension DecodeJob {
    /// Does the job on `bytes`, in the process that calls it: a decode
    /// worker's, the only place pixels are allocated. `phase` is told what
    /// starts (the decode, then each encode), so that a worker that dies is
    /// known to have died in it.
    func perform(on bytes: [UInt8], phase: (WorkerFailure.Phase) -> Void) -> Result<DecodeResult, DecodeFailure> {
        let header: ImageHeader
        do { header = try ImageHeader.probe(bytes) } catch {
            switch error {
            case .notAnImage: return .failure(.decode(.notAnImage))
            case .unsupported(let format): return .failure(.decode(.unsupported(format)))
            case .corrupt(let format, let reason): return .failure(.decode(.corrupt(format, reason)))
            case .libraryMissing(let message): return .failure(.decode(.libraryMissing(message)))
            }
        }
        phase(.decoding(header.format))
        switch work {
        case .check:
            // The limit first, as in imgcache's own process: finding a format's end may decode its last frame.
            guard maximumPixels.allows(header) else {
                return .failure(.decode(.tooManyPixels(width: header.codedWidth, height: header.codedHeight, limit: maximumPixels,
                                                       embedded: header.embedded)))
            }
            if let missing = ImageHeader.missingEnd(of: bytes, format: header.format) {
                return .failure(.decode(.corrupt(header.format, DecodeJob.truncation + missing)))
            }
            return .success(DecodeResult(outputs: [], header: header))
        case .verify:
            do {
                let decoded = try ImageDecoder.decode(bytes, maximumPixels: maximumPixels)
                if let mismatch = DecodeJob.sizeMismatch(decoded, header) { return .failure(.decode(.corrupt(header.format, mismatch))) }
                return .success(DecodeResult(outputs: []))
            } catch {
                return .failure(.decode(error))
            }
        case .variants(let transforms):
            // Each variant is made from the decode its own size asks (one decode per such size, in
            // turn): a variant's bytes, and so a name with its hash, are the same whatever other
            // sizes a run asks, as on a machine whose cache had the others already. An SVG is drawn
            // once at the largest size, and `--verify full` decodes whole, as before.
            let shared = strict || header.format == .svg
            let requests = transforms.map { ImageTransform.decodeRequest(header: header, for: shared ? transforms : [$0], strict: strict) }
            var outputs: [ImageTransform.Output?] = Array(repeating: nil, count: transforms.count)
            var done = Set<Int>()
            for first in transforms.indices where !done.contains(first) {
                let group = transforms.indices.filter { !done.contains($0) && requests[$0] == requests[first] }
                let decoded: DecodedImage
                do {
                    decoded = try ImageTransform.decodeSource(bytes, header: header, for: group.map { transforms[$0] },
                                                              maximumPixels: maximumPixels, strict: strict)
                } catch {
                    return .failure(.decode(error))
                }
                // Decoded whole, the pixels are the header's size: else the header lies (an AVIF's `ispe`
                // box claiming 9000x9000 for 64x64 pixels), and no variant is made at the size it claims.
                if requests[first].atLeast == nil || !DecodeJob.decodesSmaller.contains(header.format),
                   let mismatch = DecodeJob.sizeMismatch(decoded, header) {
                    return .failure(.decode(.corrupt(header.format, mismatch)))
                }
                for index in group {
                    phase(.transforming)
                    do {
                        outputs[index] = try transforms[index].apply(to: decoded, shown: ImageTransform.shownSize(of: header)) { phase(.encoding($0)) }
                    } catch {
                        return .failure(.encode(error))
                    }
                    done.insert(index)
                }
            }
            return .success(DecodeResult(outputs: outputs.compactMap { $0 }))
        }
    }
}

extension DecodeJob {
    /// What a whole decode's size contradicts in the header (either way round: a decoder that
    /// applies a rotation the container asks swaps the sides), nil when they agree. An SVG is
    /// drawn at whatever size is asked.
    /// The formats whose decoders may give fewer pixels than the image has, when asked for less
    /// (JPEG's DCT scaling, WebP's scaled decode, PNG rows shrunk as read; an SVG drawn at a size).
    static let decodesSmaller: Set<ImageFormat> = [.jpeg, .webp, .png, .svg]

    static func sizeMismatch(_ decoded: DecodedImage, _ header: ImageHeader) -> String? {
        guard header.format != .svg else { return nil }
        let agrees = (decoded.width == header.width && decoded.height == header.height)
            || (decoded.width == header.height && decoded.height == header.width)
        return agrees ? nil : "its pixels are \(decoded.width)×\(decoded.height), not the \(header.width)×\(header.height) its header says"
    }
}
