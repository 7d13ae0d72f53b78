#if canImport(Glibc)
import Glibc
#endif
import CImgCacheShims

/// Receives one transfer's headers and body from libcurl's callbacks: body
/// bytes are kept in memory (up to `memoryLimit`, then in a temporary file in
/// `spillDirectory`), headers are parsed per response (a redirect chain
/// delivers several), and the size limit is enforced as the bytes arrive,
/// whether or not the server announced a length.
final class TransferSink {
    let spillDirectory: String
    let maximumBytes: Int64?
    /// Bodies up to this size stay in memory.
    let memoryLimit: Int

    private(set) var receivedBytes: Int64 = 0
    private(set) var statusCode = 0
    private(set) var headers: [String: String] = [:]
    /// Why the body callback stopped the transfer, when it did.
    private(set) var abortReason: DownloadError?
    /// Receives (bytes so far, announced length) at most every `progressInterval` seconds.
    var onProgress: ((Int64, Int64?) -> Void)?
    private var lastProgress = 0.0
    static let progressInterval = 0.1

    /// The body so far, while it fits in memory.
    private(set) var memoryBody: [UInt8] = []
    /// The temporary file the body went to once it outgrew `memoryLimit`.
    private(set) var spill: (descriptor: Int32, path: String)?

    /// The final response's announced body length.
    var expectedBytes: Int64? { headers["content-length"].flatMap { Int64($0) } }

    /// The Content-Encoding libcurl decodes (gzip, deflate, br), if any.
    var contentEncoding: String? {
        headers["content-encoding"].flatMap { $0.lowercased() == "identity" ? nil : $0 }
    }

    /// How many times its encoded size a body may grow as its Content-Encoding
    /// is decoded. Images are compressed already: a gzip-encoded one grows by
    /// a few percent, an uncompressed BMP or TIFF some ten times; a
    /// decompression bomb a thousand times.
    static let maximumExpansion: Int64 = 200
    /// Bodies up to this size are never taken for bombs.
    static let expansionAllowance: Int64 = 1 << 20
    /// Body bytes as they came over the wire (before decoding), as libcurl last reported them.
    private var wireBytes: Int64 = 0

    /// Seconds a 429 or 503 asked the client to wait (delta-seconds form only).
    /// Seconds `Retry-After` asks to wait: a number, or an HTTP date (then from now).
    var retryAfter: Double? {
        guard let value = headers["retry-after"]?.trimmingSpaces else { return nil }
        if let seconds = Double(value), seconds.isFinite { return seconds }
        return HTTPDate.seconds(value).map { Double($0) - WallClock.now() }
    }

    /// Seconds without a body byte after which the transfer is abandoned.
    let idleTimeout: Double
    private var lastActivity = WallClock.monotonic()
    private var bytesAtLastActivity: Int64 = 0

    /// What the first bytes must show; nil once they were found acceptable (or none asked).
    private var bodyCheck: BodyCheck?

    /// The file a PUT sends, open while the transfer lives; -1: none.
    var uploadDescriptor: Int32 = -1

    deinit {
        if uploadDescriptor >= 0 { SystemCall.close(uploadDescriptor) }
    }

    /// libcurl's read callback: the upload's next bytes, 0 at its end, or abort when the file cannot be read.
    func readUpload(into buffer: UnsafeMutablePointer<CChar>?, count: Int) -> Int {
        guard let buffer, uploadDescriptor >= 0 else { return Int(CURL_READFUNC_ABORT) }
        while true {
            let read = Glibc.read(uploadDescriptor, buffer, count)
            if read >= 0 { return read }
            if errno != EINTR { return Int(CURL_READFUNC_ABORT) }
        }
    }

    /// `memoryLimit` is at least `BodyCheck.probeLimit`, so that the bytes a check
    /// looks at are still in memory.
    init(spillDirectory: String, maximumBytes: Int64?, memoryLimit: Int, idleTimeout: Double, bodyCheck: BodyCheck? = nil) {
        self.spillDirectory = spillDirectory
        self.maximumBytes = maximumBytes
        self.memoryLimit = memoryLimit
        self.idleTimeout = idleTimeout
        self.bodyCheck = bodyCheck
    }

    /// The body's first bytes, as they arrive: refused at once when they can
    /// be no acceptable image. Returns false to abort the transfer.
    private func examineFirstBytes(complete: Bool) -> Bool {
        guard let check = bodyCheck, spill == nil else { return true }
        let verdict = check.examine(memoryBody, contentType: headers["content-type"], complete: complete)
        if verdict.settled { bodyCheck = nil }
        guard let refusal = verdict.refusal else { return true }
        abortReason = .refused(refusal)
        return false
    }

    /// The body ended: a body too short to have been examined is examined now.
    func finishBody() -> DownloadError? {
        guard (200..<300).contains(statusCode), !examineFirstBytes(complete: true) else { return nil }
        return abortReason
    }

    /// The body as the download's answer; the spill file (if any) is closed.
    func takeBody() -> DownloadedBody.Body {
        if let spill {
            SystemCall.close(spill.descriptor)
            self.spill = (-1, spill.path)
            return .file(spill.path)
        }
        defer { memoryBody = [] }
        return .memory(memoryBody)
    }

    /// Closes and removes the spill file, if any (a failed or abandoned attempt).
    func discardBody() {
        memoryBody = []
        guard let spill else { return }
        if spill.descriptor >= 0 { SystemCall.close(spill.descriptor) }
        try? FileSystem.remove(spill.path)
        self.spill = nil
    }

    /// Called by libcurl about once a second and whenever bytes arrive or
    /// leave (`uploaded`: a PUT's body sent so far). Returns false to abort:
    /// nothing has moved for `idleTimeout`. (libcurl's own low-speed check
    /// averages over several seconds, so a burst followed by silence would
    /// outlive the timeout by that much.)
    func checkIdle(uploaded: Int64 = 0, downloaded: Int64 = 0) -> Bool {
        // libcurl counts body bytes as they arrive, before decoding them.
        wireBytes = max(wireBytes, downloaded)
        let now = WallClock.monotonic()
        if receivedBytes + uploaded != bytesAtLastActivity {
            bytesAtLastActivity = receivedBytes + uploaded
            lastActivity = now
            return true
        }
        guard now - lastActivity >= idleTimeout else { return true }
        abortReason = .timeout(seconds: idleTimeout)
        return false
    }

    /// The response headers imgcache uses; the others are skipped without
    /// being turned into text.
    static let keptHeaders = ["content-length", "content-type", "etag", "last-modified", "retry-after", "content-encoding",
                              "cache-control", "expires", "date", "age", "x-robots-tag", "location"]
        .map { Array($0.utf8) }

    /// One header line, CRLF included. A status line starts a new response.
    /// Read as bytes: this runs for every header line of every response.
    func receiveHeader(_ line: UnsafeRawBufferPointer) {
        var end = line.count
        while end > 0, line[end - 1] == 0x0A || line[end - 1] == 0x0D { end -= 1 }
        let bytes = UnsafeRawBufferPointer(rebasing: line[0..<end])
        if bytes.starts(with: "HTTP/".utf8) {
            headers = [:]
            // "HTTP/1.1 200 OK": the three digits after the first space.
            guard let space = bytes.firstIndex(of: 0x20) else { statusCode = 0; return }
            var code = 0, digits = 0
            for byte in bytes[(space + 1)...] {
                guard (0x30...0x39).contains(byte), digits < 3 else { break }
                code = code * 10 + Int(byte - 0x30)
                digits += 1
            }
            statusCode = digits == 3 ? code : 0
            return
        }
        guard let colon = bytes.firstIndex(of: 0x3A) else { return }
        let name = bytes[0..<colon]
        guard let kept = TransferSink.keptHeaders.first(where: { wanted in
            wanted.count == name.count && zip(wanted, name).allSatisfy { $0 == ($1 | 0x20) }
        }) else { return }
        var start = colon + 1
        while start < bytes.count, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        let field = String(decoding: kept, as: UTF8.self), value = String(decoding: bytes[start...], as: UTF8.self)
        // X-Robots-Tag may come once per crawler: all of them are kept.
        if field == "x-robots-tag", let before = headers[field] { headers[field] = before + ", " + value } else { headers[field] = value }
    }

    /// Body bytes. Returns false to make libcurl abort the transfer.
    func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard (200..<300).contains(statusCode) else {
            // Do not download error pages: the status is the answer.
            abortReason = .httpStatus(statusCode)
            return false
        }
        if let maximumBytes, receivedBytes + Int64(bytes.count) > maximumBytes {
            abortReason = .tooLarge(limit: maximumBytes)
            return false
        }
        if let encoding = contentEncoding, receivedBytes + Int64(bytes.count) > TransferSink.expansionAllowance,
           receivedBytes + Int64(bytes.count) > TransferSink.maximumExpansion * wireBytes {
            abortReason = .refused(.inflatesTooMuch(encoding: encoding))
            return false
        }
        do {
            try keep(bytes)
        } catch {
            abortReason = .localWrite(error)
            return false
        }
        receivedBytes += Int64(bytes.count)
        guard examineFirstBytes(complete: false) else { return false }
        if let onProgress {
            let now = WallClock.monotonic()
            if now - lastProgress >= TransferSink.progressInterval || receivedBytes == expectedBytes {
                lastProgress = now
                onProgress(receivedBytes, expectedBytes)
            }
        }
        return true
    }

    /// Keeps `bytes` in memory, or in the spill file once the body outgrows the memory limit.
    private func keep(_ bytes: UnsafeRawBufferPointer) throws(SystemError) {
        if let spill {
            try FileSystem.writeAll(spill.descriptor, bytes, path: spill.path)
            return
        }
        if memoryBody.count + bytes.count <= memoryLimit {
            if memoryBody.isEmpty, let expected = expectedBytes, expected <= Int64(memoryLimit) {
                memoryBody.reserveCapacity(Int(expected))
            }
            memoryBody.append(contentsOf: bytes)
            return
        }
        let (descriptor, path) = try TemporaryFile.create(inMaking: spillDirectory, tag: "download")
        spill = (descriptor, path)
        try FileSystem.writeAll(descriptor, memoryBody, path: path)
        memoryBody = []
        try FileSystem.writeAll(descriptor, bytes, path: path)
    }
}
