#if canImport(Glibc)
import Glibc
#endif

/// Why a decode worker ended a job without an answer: one of its limits, a
/// crash, its sandbox, or no worker at all. Says what was running (the
/// format's decoder, its encoder, or an SVG being drawn), so that the message
/// names the library at fault rather than imgcache.
public struct WorkerFailure: Equatable, Sendable, CustomStringConvertible {
    public enum Cause: Equatable, Sendable {
        /// An allocation past the job's address-space limit (bytes) failed; `budget` says what set it.
        case memoryLimit(Int, MemoryBudget = .setting)
        /// Still running when the job's time (seconds) was up: killed.
        case timeLimit(Double)
        /// Died of a signal (SIGSEGV, SIGILL, SIGABRT, SIGBUS, …).
        case crashed(Int32)
        /// Killed by its system-call filter: it tried something no decoder needs (a socket, a program).
        case forbiddenCall
        /// Ended, or answered, in a way a worker never does.
        case brokenProtocol(String)
        /// No worker could be started (no memory, no processes left, the binary gone).
        case cannotStart(String)
    }

    /// What set the memory a job could take.
    public enum MemoryBudget: Equatable, Sendable {
        /// `--max-decode-memory`: given, remembered, or its default when the estimate was higher.
        case setting
        /// What the image's header says decoding it should take: by default a job gets no more.
        case estimate
        /// imgcache's own address-space limit (`ulimit -v`) left no more.
        case inherited
    }

    /// What the worker was doing.
    public enum Phase: Equatable, Sendable {
        case decoding(ImageFormat)
        /// Turning, resizing and placing the pixels (imgcache's own code).
        case transforming
        case encoding(ImageFormat)
        /// Before the image was known (starting, reading the job).
        case starting
    }

    public let cause: Cause
    public let phase: Phase

    /// Whether the run cannot go on decoding (exit 71): nothing could be started.
    public var isSystemFailure: Bool {
        if case .cannotStart = cause { return true }
        return false
    }

    public var description: String { described(naming: nil) }

    /// The description, naming the setting that sets the limit it ran into (`--max-decode-time`).
    public func described(naming setting: String?) -> String {
        let limit = setting.map { "(its limit, \($0))" } ?? "(its limit)"
        switch cause {
        case .memoryLimit(let bytes, .inherited):
            return "\(actor) needed more than \(ByteSize.humanisedBinary(bytes)), all that imgcache's own address-space limit (ulimit -v) left it"
        case .memoryLimit(let bytes, .estimate):
            return "\(actor) needed more than \(ByteSize.humanisedBinary(bytes)), what the image's size allows it by default "
                + "(\(setting ?? "--max-decode-memory") sets what every image may take)"
        case .memoryLimit(let bytes, .setting): return "\(actor) needed more than \(ByteSize.humanisedBinary(bytes)) \(limit)"
        case .timeLimit(let seconds):
            if case .decoding(.svg) = phase { return "the SVG took more than \(DownloadError.formatSeconds(seconds)) to draw \(limit)" }
            return "\(actor) took more than \(DownloadError.formatSeconds(seconds)) \(limit)"
        case .crashed(let signal): return "\(actor) crashed (\(WorkerFailure.signalName(signal)))"
        case .forbiddenCall: return "\(actor) was stopped by its sandbox (it made a forbidden system call)"
        case .brokenProtocol(let detail): return "\(actor) failed: \(detail)"
        case .cannotStart(let reason): return "cannot start a decode worker: \(reason)"
        }
    }

    /// "the JPEG XL decoder", "the AVIF encoder", "the SVG renderer".
    private var actor: String {
        switch phase {
        case .decoding(.svg): return "the SVG renderer"
        case .decoding(let format): return "the \(CodecRegistry.codec(for: format).displayName) decoder"
        case .transforming: return "resizing"
        case .encoding(let format): return "the \(CodecRegistry.codec(for: format).displayName) encoder"
        case .starting: return "the decode worker"
        }
    }

    /// `SIGSEGV`, or the number when it has no usual name.
    static func signalName(_ signal: Int32) -> String {
        let names: [Int32: String] = [SIGSEGV: "SIGSEGV", SIGBUS: "SIGBUS", SIGILL: "SIGILL", SIGABRT: "SIGABRT", SIGFPE: "SIGFPE",
                                      SIGTRAP: "SIGTRAP", SIGKILL: "SIGKILL", SIGTERM: "SIGTERM", SIGXCPU: "SIGXCPU",
                                      SIGSYS: "SIGSYS", SIGPIPE: "SIGPIPE", SIGINT: "SIGINT", SIGHUP: "SIGHUP"]
        return names[signal] ?? "signal \(signal)"
    }
}

extension ByteSize {
    /// `1.2 GiB`, `300 MiB`: a limit as powers of two, as memory is counted.
    public static func humanisedBinary(_ bytes: Int) -> String {
        let units = ["KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes), unit = -1
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        guard unit >= 0 else { return "\(bytes) bytes" }
        let tenths = Int((value * 10).rounded())
        return tenths % 10 == 0 || tenths >= 1000 ? "\(Int(value.rounded())) \(units[unit])" : "\(tenths / 10).\(tenths % 10) \(units[unit])"
    }
}
