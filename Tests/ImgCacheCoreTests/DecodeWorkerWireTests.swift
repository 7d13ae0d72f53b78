import Foundation
@testable import ImgCacheCore
import Testing

/// What crosses between imgcache and a decode worker, and how a dead worker's
/// remains are read: the rules, without a worker.
@Suite struct DecodeWorkerWireTests {
    @Test func aMessageKeepsEveryByteOfItsValuesAndNoValueStartsALine() throws {
        var message = WorkerMessage("done")
        message.add("text", "line one\nline two\r% 100%0A")
        message.add("output", "webp 10 20 1 345")
        message.add("empty", "")
        let encoded = message.encoded
        // One line a field: a library's message can never pass for a field of its own.
        #expect(encoded.split(separator: 0x0A).count == 4)
        let decoded = try #require(WorkerMessage(decoding: encoded[...]))
        #expect(decoded == message)
        #expect(decoded["text"] == "line one\nline two\r% 100%0A" && decoded.kind == "done" && decoded["empty"] == "")
        #expect(WorkerMessage(decoding: Array("no-space-here".utf8)[...]) == nil)
    }

    @Test func aJobCrossesWithEveryPartOfEveryTransform() throws {
        var first = ImageTransform(thumbnail: .init(width: 320, height: nil), scaleDownLimit: PixelLimit(pixels: 1_000_000), format: .webp)
        first.fit = .cover
        first.upscale = true
        first.quality = 61
        first.background = RGBColor(red: 1, green: 2, blue: 3)
        first.padding = RGBColor(red: 9, green: 8, blue: 7)
        first.transformsAnimations = true
        let second = ImageTransform(thumbnail: .init(width: nil, height: 64))
        let job = DecodeJob(work: .variants([first, second]), maximumPixels: PixelLimit(pixels: 12345), strict: true)
        let message = try #require(WorkerMessage(decoding: job.message.encoded[...]))
        let received = try #require(DecodeJob(message))
        #expect(received == job)
        #expect(DecodeJob(WorkerMessage(decoding: DecodeJob(work: .verify, maximumPixels: .standard).message.encoded[...])!)?.work == .verify)
        // A transform that does not read is no job.
        var broken = WorkerMessage("job")
        broken.add("work", "variants")
        broken.add("transform", "fit=sideways")
        broken.add("maximum-pixels", 1)
        #expect(DecodeJob(broken) == nil)
    }

    @Test func everyDecodeAndEncodeFailureCrossesAsItWas() throws {
        let failures: [DecodeFailure] = [
            .decode(.notAnImage), .decode(.unsupported(.tiff)), .decode(.corrupt(.png, "IDAT: incorrect header check")),
            .decode(.tooManyPixels(width: 2000, height: 2000, limit: PixelLimit(pixels: 100), frames: 2000)),
            .decode(.libraryMissing("cannot load libjxl.so.0.7")), .encode(.unsupported(.bmp)), .encode(.failed(.avif, "too big")),
            .encode(.libraryMissing("cannot load libavif.so.15")),
        ]
        for failure in failures {
            var message = WorkerMessage("done")
            message.fields(describing: failure)
            #expect(WorkerMessage(decoding: message.encoded[...])?.failure == failure, "\(failure)")
        }
    }

    @Test func aDeadWorkersCauseIsReadFromItsSignalErrnoAndWords() {
        let limit = (bytes: 1 << 30, budget: WorkerFailure.MemoryBudget.setting)
        func cause(_ signal: Int32?, errno: Int32? = nil, printed: [String] = [], exit: Int32? = nil) -> WorkerFailure.Cause {
            WorkerFailureClassifier.cause(signal: signal, exitStatus: exit, reportedErrno: errno, printed: printed, limit: limit, seconds: 30)
        }
        #expect(cause(SIGSYS) == .forbiddenCall)
        #expect(cause(SIGXCPU) == .timeLimit(30))
        #expect(cause(SIGABRT, errno: ENOMEM) == .memoryLimit(1 << 30))
        #expect(cause(SIGABRT, printed: ["memory allocation of 2147483648 bytes failed"]) == .memoryLimit(1 << 30))
        #expect(cause(SIGILL, printed: ["Fatal error: failed to allocate 399920036 bytes"]) == .memoryLimit(1 << 30))
        #expect(cause(nil, printed: ["rendering error: NoMemory"], exit: 1) == .memoryLimit(1 << 30))
        #expect(cause(SIGSEGV) == .crashed(SIGSEGV))
        #expect(cause(nil, exit: 3) == .brokenProtocol("it exited with status 3"))
        // The wait status's halves.
        #expect(WorkerFailureClassifier.signal(of: 9) == 9 && WorkerFailureClassifier.exitStatus(of: 9) == nil)
        #expect(WorkerFailureClassifier.signal(of: 3 << 8) == nil && WorkerFailureClassifier.exitStatus(of: 3 << 8) == 3)
    }

    @Test func messagesNameWhatRanAndTheLimit() {
        #expect(WorkerFailure(cause: .timeLimit(30), phase: .decoding(.svg)).described(naming: "--max-decode-time")
                == "the SVG took more than 30 s to draw (its limit, --max-decode-time)")
        #expect(WorkerFailure(cause: .memoryLimit(1_288_490_189), phase: .decoding(.jxl)).description
                == "the JPEG XL decoder needed more than 1.2 GiB (its limit)")
        #expect(WorkerFailure(cause: .crashed(SIGSEGV), phase: .decoding(.avif)).description == "the AVIF decoder crashed (SIGSEGV)")
        #expect(WorkerFailure(cause: .timeLimit(2), phase: .encoding(.webp)).description == "the WebP encoder took more than 2 s (its limit)")
        #expect(WorkerFailure(cause: .memoryLimit(64 << 20, .inherited), phase: .transforming).description
                == "resizing needed more than 64 MiB, all that imgcache's own address-space limit (ulimit -v) left it")
        // A budget from the image's size is not the setting: the message says which, and how to give more.
        #expect(WorkerFailure(cause: .memoryLimit(488 << 20, .estimate), phase: .decoding(.svg)).described(naming: "--max-decode-memory")
                == "the SVG renderer needed more than 488 MiB, what the image's size allows it by default (--max-decode-memory sets what every image may take)")
    }

    @Test func aJobGetsItsEstimateByDefaultAndTheSettingWhenAskedFor() {
        var limits = DecodeLimits()
        limits.memory = 2 << 30
        #expect(limits.budget(forEstimate: 100 << 20) == (100 << 20, .estimate))
        #expect(limits.budget(forEstimate: 3 << 30) == (2 << 30, .setting))
        let given = DecodeLimits.resolve(seconds: nil, memory: 1 << 30, remembered: NamespaceSettings())
        #expect(given.budget(forEstimate: 100 << 20) == (1 << 30, .setting))
        var remembered = NamespaceSettings()
        remembered.decodeMemory = 512 << 20
        #expect(DecodeLimits.resolve(seconds: nil, memory: nil, remembered: remembered).budget(forEstimate: 1 << 20) == (512 << 20, .setting))
    }

    @Test func aJobsBudgetGrowsWithWhatItDecodesAndWrites() {
        let photo = ImageHeader(format: .jpeg, width: 4000, height: 3000, frameCount: 1)
        let verify = DecodeLimits.estimate(DecodeJob(work: .verify, maximumPixels: .standard), header: photo, bodySize: 1_000_000)
        // At least the pixels themselves and the file.
        #expect(verify.total >= 4000 * 3000 * 4 + 1_000_000)
        let small = DecodeLimits.estimate(DecodeJob(work: .variants([ImageTransform(thumbnail: .init(width: 256, height: nil))]),
                                                    maximumPixels: .standard), header: photo, bodySize: 1_000_000)
        let large = DecodeLimits.estimate(DecodeJob(work: .variants([ImageTransform(thumbnail: .init(width: 256, height: nil), format: .avif)]),
                                                    maximumPixels: .standard), header: photo, bodySize: 1_000_000)
        #expect(small.encoding.count == 1 && large.encoding[0] > small.encoding[0])
        // Every frame of an animation kept as one counts.
        let animation = ImageHeader(format: .gif, width: 500, height: 500, frameCount: 100)
        let gif = DecodeLimits.estimate(DecodeJob(work: .variants([ImageTransform(thumbnail: .init(width: 100, height: nil), format: .webp)]),
                                                  maximumPixels: .standard), header: animation, bodySize: 0)
        #expect(gif.decoding >= 500 * 500 * 4 * 100)
    }

    @Test func decodeLimitsReadAsPeopleWriteThem() throws {
        #expect(try DecodeLimits.seconds(parsing: "30s") == 30 && DecodeLimits.seconds(parsing: "500ms") == 0.5)
        #expect(throws: ValueError.self) { try DecodeLimits.seconds(parsing: "2h") }
        #expect(throws: ValueError.self) { try DecodeLimits.seconds(parsing: "10ms") }
        #expect(try DecodeLimits.memory(parsing: "512MiB") == 512 << 20)
        #expect(throws: ValueError.self) { try DecodeLimits.memory(parsing: "1M") }
        #expect(throws: ValueError.self) { try DecodeLimits.memory(parsing: "100T") }
    }
}
