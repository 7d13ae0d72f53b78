#if canImport(Glibc)
import Glibc
#endif
import CImgCacheShims

/// The decode worker: imgcache's own binary started again as
/// `imgcache --decode-worker PARENT` by `DecodeWorkerProcess`, never forked
/// from the threaded process. It confines itself (it dies with its parent, no
/// core files, no new privileges, the system-call filter), then takes jobs on
/// descriptor 3 one at a time: the image's bytes come by descriptor, each
/// variant is written to the result descriptor it is handed, and the answer
/// goes back as a message. Its limits are set from outside, by imgcache, and
/// its filter forbids changing them.
public enum DecodeWorkerMain {
    /// The word that starts a worker (argv[1]); the parent's process id follows.
    public static let modeArgument = "--decode-worker"

    /// The channel's descriptor in the worker.
    static let channel: Int32 = 3

    /// The largest job message read (transforms are a few hundred bytes each).
    static let messageCapacity = 1 << 20

    /// Runs a worker for `arguments` (the words after the program's name); its exit status.
    public static func run(_ arguments: [String]) -> Int32 {
        guard arguments.count == 2, arguments[0] == modeArgument, let parent = Int32(arguments[1]) else {
            return complain("\(modeArgument) is how imgcache starts its decode workers, not a command", status: 64)
        }
        // Made before the filter is set: imgcache reads from it what a job that ended was doing.
        guard let page = WorkerPhasePage.create() else {
            return complain("cannot start a decode worker: \(Errno(errno))", status: 71)
        }
        var error = [CChar](repeating: 0, count: 256)
        guard ic_worker_confine(parent, &error, error.count) == 0 else {
            return complain("cannot confine a decode worker: \(CodecShim.message(error))", status: 71)
        }
        ic_worker_keep_memory()
        // imgcache ends its workers itself (SIGKILL); a terminal's signals are its to take.
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE] { Glibc.signal(signal, SIG_IGN) }
        ic_worker_report_crashes(channel)
        var ready = WorkerMessage("ready")
        ready.add("address-space", Int(ic_address_space(0)))
        guard send(ready, handing: page.descriptor) else { return 0 }
        page.closeDescriptor()
        var buffer = [UInt8](repeating: 0, count: messageCapacity)
        while true {
            var descriptors: [Int32] = [-1, -1]
            var count: Int32 = 0
            let received = buffer.withUnsafeMutableBytes {
                ic_message_receive(channel, $0.baseAddress, $0.count, &descriptors, 2, &count)
            }
            // imgcache closed its end (or is gone): nothing more will come.
            guard received > 0, let message = WorkerMessage(decoding: buffer[..<Int(received)]), let job = DecodeJob(message),
                  count >= 1 else {
                return received == 0 ? 0 : 70
            }
            let body = descriptors[0], result = count >= 2 ? descriptors[1] : -1
            defer {
                SystemCall.close(body)
                if result >= 0 { SystemCall.close(result) }
            }
            // A check of the sandbox (Docs/SECURITY.md): what the filter does with a forbidden call.
            if let attempt = getenv("IMGCACHE_WORKER_ATTEMPT") {
                let status = ic_worker_attempt(attempt)
                let said = status == 0 ? "allowed" : "refused: \(Errno(-status))"
                _ = "tried \(String(cString: attempt)): \(said)\n".utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
            }
            guard let bytes = readWhole(body) else {
                var answer = WorkerMessage("done")
                answer.add("failure", "unreadable")
                guard send(answer) else { return 0 }
                continue
            }
            let outcome = job.perform(on: bytes) { phase in page.phase = phase }
            guard send(answer(for: outcome, writingTo: result)) else { return 0 }
        }
    }

    /// The answer for a job's outcome, its outputs written one after another to `result`.
    private static func answer(for outcome: Result<DecodeResult, DecodeFailure>, writingTo result: Int32) -> WorkerMessage {
        var answer = WorkerMessage("done")
        switch outcome {
        case .success(let made):
            for output in made.outputs {
                guard result >= 0, (try? FileSystem.writeAll(result, output.bytes, path: "the result")) != nil else {
                    answer = WorkerMessage("done")
                    answer.add("failure", "unwritable")
                    break
                }
                var line = "\(output.format.rawValue) \(output.width) \(output.height) \(output.frameCount) \(output.bytes.count)"
                if let placeholder = output.placeholder { line += " \(placeholder.dominantColor) \(placeholder.thumbHashBase64)" }
                answer.add("output", line)
            }
            if let header = made.header { answer.add(header: header) }
        case .failure(let failure):
            answer.fields(describing: failure)
        }
        answer.add("cpu-ms", Int(ic_cpu_milliseconds()))
        answer.add("peak-rss", peakMemory())
        return answer
    }

    /// getrusage's maximum when the peak was last read, and that peak.
    nonisolated(unsafe) private static var peakRead = (maximum: UInt64(0), peak: 0)

    /// The worker's peak memory (VmHWM), read again only when getrusage's maximum moved: formatting
    /// /proc/self/status after every image cost more than some thumbnails take.
    private static func peakMemory() -> Int {
        // A worker is one thread: nothing else reads or writes `peakRead`.
        let maximum = ic_rusage_max_rss()
        if maximum != peakRead.maximum || peakRead.peak == 0 { peakRead = (maximum, WorkerRegistry.ownPeakMemory) }
        return peakRead.peak
    }

    /// The whole file behind `descriptor`, read from its start.
    private static func readWhole(_ descriptor: Int32) -> [UInt8]? {
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_size >= 0 else { return nil }
        let size = Int(status.st_size)
        var failed = false
        let bytes = [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
            var done = 0
            while done < size {
                guard case .success(let count) = SystemCall.pread(descriptor, buffer.baseAddress! + done, size - done, off_t(done)),
                      count > 0 else {
                    failed = true
                    break
                }
                done += count
            }
            initialized = failed ? 0 : size
        }
        return failed ? nil : bytes
    }

    @discardableResult
    static func send(_ message: WorkerMessage, handing descriptor: Int32 = -1) -> Bool {
        let bytes = message.encoded
        let descriptors = [descriptor]
        return bytes.withUnsafeBytes { message in
            descriptors.withUnsafeBufferPointer {
                ic_message_send(channel, message.baseAddress, message.count, descriptor >= 0 ? $0.baseAddress : nil, descriptor >= 0 ? 1 : 0)
            }
        } > 0
    }

    private static func complain(_ text: String, status: Int32) -> Int32 {
        let line = "imgcache: \(text)\n"
        _ = line.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
        return status
    }
}

extension WorkerMessage {
    /// A checked header, on one line: format, sizes, frames (-1: unknown), alpha, depth, orientation,
    /// colour profile, coded size, and the images an SVG embeds (-1: none).
    mutating func add(header: ImageHeader) {
        let fields: [String] = [header.format.rawValue, "\(header.width)", "\(header.height)", "\(header.frameCount ?? -1)",
                                header.hasAlpha ? "1" : "0", "\(header.bitDepth)", "\(header.orientation)", header.hasColourProfile ? "1" : "0",
                                "\(header.codedWidth)", "\(header.codedHeight)", "\(header.embedded?.count ?? -1)", "\(header.embedded?.pixels ?? 0)"]
        add("header", fields.joined(separator: " "))
    }

    /// The header `add(header:)` wrote; nil when there is none or it does not read.
    var header: ImageHeader? {
        guard let line = self["header"] else { return nil }
        let parts = line.split(separator: " ").map(String.init)
        guard parts.count == 12, let format = ImageFormat(rawValue: parts[0]) else { return nil }
        let numbers = parts.dropFirst().compactMap { Int($0) }
        guard numbers.count == 11 else { return nil }
        var header = ImageHeader(format: format, width: numbers[0], height: numbers[1], frameCount: numbers[2] < 0 ? nil : numbers[2],
                                 hasAlpha: numbers[3] == 1, bitDepth: numbers[4], orientation: numbers[5])
        header.hasColourProfile = numbers[6] == 1
        header.codedWidth = numbers[7]
        header.codedHeight = numbers[8]
        if numbers[9] >= 0 { header.embedded = ImageHeader.EmbeddedImages(count: numbers[9], pixels: numbers[10]) }
        return header
    }

    /// A failure's fields, as `DecodeWorkerProcess` reads them back.
    mutating func fields(describing failure: DecodeFailure) {
        switch failure {
        case .decode(let error):
            add("failure", "decode")
            switch error {
            case .notAnImage: add("error", "not-an-image")
            case .unsupported(let format):
                add("error", "unsupported")
                add("format", format.rawValue)
            case .corrupt(let format, let reason):
                add("error", "corrupt")
                add("format", format.rawValue)
                add("text", reason)
            case .tooManyPixels(let width, let height, let limit, let frames, let embedded):
                add("error", "pixels")
                add("width", width)
                add("height", height)
                add("limit", limit.pixels)
                add("frames", frames)
                if let embedded {
                    add("embedded", embedded.count)
                    add("embedded_pixels", embedded.pixels)
                }
            case .libraryMissing(let message):
                add("error", "library")
                add("text", message)
            }
        case .encode(let error):
            add("failure", "encode")
            switch error {
            case .unsupported(let format):
                add("error", "unsupported")
                add("format", format.rawValue)
            case .failed(let format, let reason):
                add("error", "failed")
                add("format", format.rawValue)
                add("text", reason)
            case .libraryMissing(let message):
                add("error", "library")
                add("text", message)
            }
        case .contained, .interrupted:
            add("failure", "unexpected")
        }
    }

    /// The failure `fields(describing:)` wrote; nil when the fields say none.
    var failure: DecodeFailure? {
        let format = self["format"].flatMap { ImageFormat(rawValue: $0) }
        let text = self["text"] ?? ""
        switch (self["failure"], self["error"]) {
        case (nil, _): return nil
        case ("decode", "not-an-image"): return .decode(.notAnImage)
        case ("decode", "unsupported"): return format.map { .decode(.unsupported($0)) }
        case ("decode", "corrupt"): return format.map { .decode(.corrupt($0, text)) }
        case ("decode", "pixels"):
            guard let width = number("width"), let height = number("height"), let limit = number("limit") else { return nil }
            let embedded = number("embedded").map { ImageHeader.EmbeddedImages(count: $0, pixels: number("embedded_pixels") ?? Int.max) }
            return .decode(.tooManyPixels(width: width, height: height, limit: PixelLimit(pixels: limit), frames: number("frames") ?? 1,
                                          embedded: embedded))
        case ("decode", "library"): return .decode(.libraryMissing(text))
        case ("encode", "library"): return .encode(.libraryMissing(text))
        case ("encode", "unsupported"): return format.map { .encode(.unsupported($0)) }
        case ("encode", "failed"): return format.map { .encode(.failed($0, text)) }
        default: return nil
        }
    }
}
