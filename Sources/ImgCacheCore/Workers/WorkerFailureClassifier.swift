#if canImport(Glibc)
import Glibc
#endif

/// Tells why a worker died from what is left of it: the signal or status it
/// ended with, the errno its crash report carried (ENOMEM after an allocation
/// the address-space limit refused), and what its libraries printed ("memory
/// allocation of N bytes failed", "Insufficient memory"). Libraries die of a
/// refused allocation in every way there is (Rust and GLib abort, libjxl
/// traps, Swift's runtime traps, some return an error), so each is read.
enum WorkerFailureClassifier {
    /// Phrases with which libraries say an allocation failed.
    static let memoryPhrases = ["out of memory", "insufficient memory", "memory allocation", "failed to allocate", "cannot allocate",
                                "could not allocate", "bad_alloc", "not enough memory", "allocation failed", "alloc failed",
                                "memory exhausted", "unable to allocate", "nomemory"]

    static func mentionsMemory(_ text: String) -> Bool {
        let lowered = text.lowercased()
        return memoryPhrases.contains { lowered.contains($0) }
    }

    static func mentionsMemory(_ lines: [String]) -> Bool {
        lines.contains { mentionsMemory($0) }
    }

    /// The signal a wait status ended with, if any.
    static func signal(of status: Int32) -> Int32? {
        let low = status & 0x7F
        return low != 0 && low != 0x7F ? low : nil
    }

    /// The exit status a wait status ended with, if it exited.
    static func exitStatus(of status: Int32) -> Int32? {
        status & 0x7F == 0 ? (status >> 8) & 0xFF : nil
    }

    /// Why a worker that ended on its own (not killed for time) ended.
    static func cause(signal: Int32?, exitStatus: Int32?, reportedErrno: Int32?, printed: [String], limit: (bytes: Int, budget: WorkerFailure.MemoryBudget),
                      seconds: Double) -> WorkerFailure.Cause {
        if signal == SIGSYS { return .forbiddenCall }
        // The CPU limit (the wall clock's twin, for a library's threads).
        if signal == SIGXCPU { return .timeLimit(seconds) }
        if reportedErrno == ENOMEM || mentionsMemory(printed) { return .memoryLimit(limit.bytes, limit.budget) }
        if let signal { return .crashed(signal) }
        return .brokenProtocol("it exited with status \(exitStatus ?? -1)")
    }
}
