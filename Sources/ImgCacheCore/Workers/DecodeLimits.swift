#if canImport(Glibc)
import Glibc
#endif

/// What bounds each decode job: its time (wall clock, and CPU as its twin)
/// and the memory it may take, from which its worker's address-space limit is
/// derived job by job.
public struct DecodeLimits: Equatable, Sendable {
    /// Seconds an image's decode, transforms and encodes may take (`--max-decode-time`).
    public var seconds: Double = DecodeLimits.defaultSeconds
    /// Bytes one job may take at most (`--max-decode-memory`).
    public var memory: Int = DecodeLimits.defaultMemory
    /// Whether `memory` was asked for (given or remembered): then it is every job's budget; by
    /// default a job gets what its header says it should need, up to `memory`.
    public var memoryGiven = false

    public static let defaultSeconds = 30.0
    /// A quarter of the machine's memory, at most 2 GiB.
    public static var defaultMemory: Int { min(2 << 30, DecodeLimits.physicalMemory / 4) }

    /// The machine's memory (4 GiB when it cannot be told), asked of the system once per process:
    /// every run's settings start from it.
    public static let physicalMemory: Int = {
        let pages = Int(sysconf(Int32(_SC_PHYS_PAGES))), pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        return pages > 0 && pageSize > 0 ? pages * pageSize : 4 << 30
    }()

    public init() {}

    /// The shortest and longest time limit taken.
    public static let secondsRange = 0.1...3600.0
    /// The smallest memory limit taken: less leaves no room for a decoder's own tables.
    public static let smallestMemory = 32 << 20

    /// `--max-decode-time` and its setting: a duration from 0.1 s to an hour.
    public static func seconds(parsing text: String) throws(ValueError) -> Double {
        let span: TimeSpan
        do { span = try TimeSpan(parsing: text) } catch { throw ValueError("expected a duration from 100ms to 1h (30s, 2m)") }
        guard secondsRange.contains(span.seconds) else { throw ValueError("expected a duration from 100ms to 1h (30s, 2m)") }
        return span.seconds
    }

    /// `--max-decode-memory` and its setting: a size from 32 MiB to the machine's memory.
    public static func memory(parsing text: String) throws(ValueError) -> Int {
        let size: ByteSize
        do { size = try ByteSize(parsing: text) } catch { throw ValueError("expected a size from 32M to this machine's memory (512M, 2G)") }
        guard size.bytes >= Int64(smallestMemory), size.bytes <= Int64(physicalMemory) else {
            throw ValueError("expected a size from 32M to this machine's memory (\(ByteSize.humanisedBinary(physicalMemory)))")
        }
        return Int(size.bytes)
    }

    /// The remembered limits a run may take: a lower one than the default always; one that widens
    /// it (more time, more memory) only from a settings file this user alone can write, or any
    /// member of a team cache could lift everyone's limits. What is dropped is said, one line each.
    public static func trusted(_ remembered: NamespaceSettings, writableByUserAlone: Bool) -> (settings: NamespaceSettings, ignored: [String]) {
        guard !writableByUserAlone else { return (remembered, []) }
        var settings = remembered
        var ignored: [String] = []
        let why = "the settings file can be written by others than you, and a remembered limit above the default is taken only from one you alone can write"
        if let seconds = remembered.decodeSeconds, seconds > defaultSeconds {
            settings.decodeSeconds = nil
            ignored.append("ignoring its remembered max-decode-time \(spelled(seconds)): \(why) "
                           + "(the default \(spelled(defaultSeconds)) applies; give --max-decode-time to allow more)")
        }
        if let memory = remembered.decodeMemory, memory > defaultMemory {
            settings.decodeMemory = nil
            ignored.append("ignoring its remembered max-decode-memory \(ByteSize.humanisedBinary(memory)): \(why) "
                           + "(the default \(ByteSize.humanisedBinary(defaultMemory)) applies; give --max-decode-memory to allow more)")
        }
        return (settings, ignored)
    }

    private static func spelled(_ seconds: Double) -> String {
        seconds == seconds.rounded() && seconds < 1e9 ? "\(Int(seconds))s" : "\(seconds)s"
    }

    /// The limits given (nil: not given), else the namespace's remembered ones, else the defaults.
    public static func resolve(seconds: Double?, memory: Int?, remembered: NamespaceSettings) -> DecodeLimits {
        var limits = DecodeLimits()
        limits.seconds = seconds ?? remembered.decodeSeconds ?? defaultSeconds
        limits.memory = memory ?? remembered.decodeMemory ?? defaultMemory
        limits.memoryGiven = memory != nil || remembered.decodeMemory != nil
        return limits
    }

    /// The memory a job expected to need `estimate` bytes may take, and what set it: the estimate
    /// by default (a decoder that takes far more than an image's size says is refused early, so
    /// that several at once cannot take the machine), `memory` when asked for or lower.
    func budget(forEstimate estimate: Int) -> (bytes: Int, budget: WorkerFailure.MemoryBudget) {
        memoryGiven || estimate >= memory ? (memory, .setting) : (estimate, .estimate)
    }

    /// What a job is expected to need, from the header: the bytes themselves,
    /// every pixel decoded (frames x area x bytes a pixel x the format's
    /// factor: a decoder's own planes and rows), the copies the transforms
    /// make, and each encoder's working memory.
    struct Estimate: Equatable {
        var decoding: Int
        /// Per transform: what resizing and encoding it takes.
        var encoding: [Int]

        /// The whole job's: the decode, and the largest transform beside it.
        var total: Int {
            let (sum, overflow) = decoding.addingReportingOverflow(encoding.max() ?? 0)
            return overflow ? Int.max : sum
        }
    }

    static func estimate(_ job: DecodeJob, header: ImageHeader, bodySize: Int) -> Estimate {
        let codec = CodecRegistry.codec(for: header.format)
        let frames = max(1, header.frameCount ?? 1)
        let bytesPerPixel = header.bitDepth > 8 ? 8 : 4
        func bytes(_ pixels: Double, _ factor: Double) -> Int {
            let value = pixels * factor
            return value >= Double(Int.max / 2) ? Int.max / 2 : Int(value)
        }
        switch job.work {
        case .check:
            // The body, and what a library's header reader holds beside it.
            return Estimate(decoding: bodySize + (64 << 20), encoding: [])
        case .verify:
            let area = Double(header.pixelsToDecode)
            return Estimate(decoding: bodySize + bytes(area * Double(frames * bytesPerPixel), codec.decodeMemoryFactor), encoding: [])
        case .variants(let transforms):
            let keepsFrames = transforms.contains { $0.keepsFrames(of: header.format, frameCount: frames) }
            let decodedFrames = Double(keepsFrames ? frames : 1)
            let drawn: Double
            if header.format == .svg {
                let sizes = transforms.map { $0.drawingSize(width: header.width, height: header.height) }
                // Drawn at the largest size asked, the images it embeds decoded at their own beside it.
                drawn = (sizes.map { Double($0.width) * Double($0.height) }.max() ?? Double(header.width * header.height))
                    + Double(header.embedded?.pixels ?? 0)
            } else {
                drawn = Double(header.codedWidth) * Double(header.codedHeight)
            }
            // The decoder's work, then the pixels in sRGB and turned upright beside it.
            let decoding = bodySize + bytes(drawn * decodedFrames * Double(bytesPerPixel), codec.decodeMemoryFactor)
                + bytes(drawn * decodedFrames * 4, 2)
            let shown = header.uprightSize
            let encoding = transforms.map { transform -> Int in
                let layout = transform.layout(width: shown.width, height: shown.height)
                let framesKept = Double(transform.keepsFrames(of: header.format, frameCount: frames) ? frames : 1)
                let resized = Double(layout.scaled.width) * Double(layout.scaled.height) + Double(layout.canvas.width) * Double(layout.canvas.height)
                let format = transform.outputFormat(for: header.format, animated: frames > 1)
                let encoder = CodecRegistry.codec(for: format).encodeMemoryFactor
                return bytes(resized * framesKept * 4, 1)
                    + bytes(Double(layout.canvas.width) * Double(layout.canvas.height) * framesKept * 4, encoder)
            }
            return Estimate(decoding: decoding, encoding: encoding)
        }
    }
}
