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
                _ = try ImageDecoder.decode(bytes, maximumPixels: maximumPixels)
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
