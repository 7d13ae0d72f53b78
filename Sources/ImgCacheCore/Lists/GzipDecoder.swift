import CImgCacheShims

/// Inflates a gzip stream as it is read, a chunk at a time (a list of URLs
/// given as `urls.csv.gz`), in memory bounded by the chunk. Members written
/// one after another (`cat a.gz b.gz`) are read as one stream. Used by one
/// thread.
final class GzipDecoder {
    /// Why a gzip stream cannot be read.
    struct Failure: Error, Equatable, CustomStringConvertible {
        let reason: String
        var description: String { reason }
    }

    private let stream: UnsafeMutableRawPointer
    /// Bytes taken since the last member ended: a stream ending here is cut short.
    private var insideMember = false
    private var output = [UInt8](repeating: 0, count: 256 * 1024)

    init() throws(Failure) {
        var error = [CChar](repeating: 0, count: 256)
        guard let stream = ic_gunzip_new(&error, error.count) else {
            throw Failure(reason: String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        self.stream = stream
    }

    deinit {
        ic_gunzip_free(stream)
    }

    /// The bytes `input` inflates to (all of it is taken).
    func push(_ input: ArraySlice<UInt8>) throws(Failure) -> [UInt8] {
        var inflated: [UInt8] = []
        try push(input) { inflated += $0 }
        return inflated
    }

    /// Inflates `input` (all of it is taken), handing each piece to `take` as it comes, at most a
    /// buffer's worth at a time: a chunk that inflates a thousandfold (a gigabyte-long line of one
    /// byte) is never held whole.
    func push<E: Error>(_ input: ArraySlice<UInt8>, into take: (ArraySlice<UInt8>) throws(E) -> Void) throws(Failure) {
        pending = nil
        var offset = input.startIndex
        while offset < input.endIndex {
            var consumed = 0, produced = 0
            let status = input.withUnsafeBufferPointer { source in
                output.withUnsafeMutableBufferPointer { target in
                    ic_gunzip_step(stream, source.baseAddress! + (offset - input.startIndex), input.endIndex - offset, &consumed,
                                   target.baseAddress, target.count, &produced)
                }
            }
            guard status >= 0 else { throw Failure(reason: "not gzip data, or damaged") }
            try hand(produced, to: take)
            offset += consumed
            if consumed > 0 { insideMember = true }
            if status == 1 { insideMember = false }
            // Output full: inflate again with the rest of the input (and whatever zlib still holds).
            if consumed == 0, produced == 0, status == 0 { break }
        }
        // zlib may hold inflated bytes that did not fit the buffer: drained until it has none.
        while true {
            var consumed = 0, produced = 0
            let status = output.withUnsafeMutableBufferPointer { target in
                ic_gunzip_step(stream, nil, 0, &consumed, target.baseAddress, target.count, &produced)
            }
            guard status >= 0 else { throw Failure(reason: "not gzip data, or damaged") }
            try hand(produced, to: take)
            if status == 1 { insideMember = false }
            if produced < output.count { break }
        }
    }

    /// The first `count` bytes of the output buffer, to `take`; its failure is the caller's to throw.
    private func hand<E: Error>(_ count: Int, to take: (ArraySlice<UInt8>) throws(E) -> Void) throws(Failure) {
        guard count > 0, pending == nil else { return }
        do { try take(output[0..<count]) } catch { pending = error }
    }

    /// What `take` threw, for the caller of `push(_:into:)` to rethrow.
    var pending: (any Error)?

    /// Checks that the stream ended where a member did.
    func finish() throws(Failure) {
        if insideMember { throw Failure(reason: "the gzip data is cut short") }
    }
}
