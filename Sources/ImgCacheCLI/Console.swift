#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCore

/// A buffered writer on a file descriptor (standard output or error).
/// Owned by one thread: the command being run.
final class OutputChannel {
    let descriptor: Int32
    private var buffer: [UInt8] = []

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    func write(_ text: String) throws(SystemError) {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= 64 * 1024 { try flush() }
    }

    func flush() throws(SystemError) {
        if let failure { throw failure }
        guard !buffer.isEmpty else { return }
        defer { buffer.removeAll(keepingCapacity: true) }
        do {
            if descriptor == 2 {
                // Never while a library's own output is kept off stderr (LibraryOutput).
                try LibraryOutput.whileWritingStandardError { () throws(SystemError) in
                    try FileSystem.writeAll(descriptor, buffer, path: "standard error")
                }
            } else {
                try FileSystem.writeAll(descriptor, buffer, path: "standard output")
            }
        } catch {
            failure = error
            throw error
        }
    }

    /// The first write that failed: kept, so that a flush whose error a
    /// caller could not act on (before a message) still ends the run with it.
    private(set) var failure: SystemError?

    /// Whether the descriptor is a terminal (asked once: it does not change during a run).
    private(set) lazy var isTerminal: Bool = isatty(descriptor) == 1
}

/// Where a command's output goes: data on stdout, messages on stderr.
final class Console {
    let standardOutput = OutputChannel(descriptor: 1)
    let standardError = OutputChannel(descriptor: 2)
    let useColor: Bool
    let quiet: Bool
    let verbosity: Int
    /// The progress line at the bottom of a terminal, redrawn after each message.
    private var status: String?

    init(globals: GlobalOptions, environment: Environment) {
        useColor = Console.colorEnabled(globals.color, environment: environment, isTerminal: standardError.isTerminal)
        quiet = globals.quiet
        verbosity = globals.verbosity
    }

    /// Colour only when asked for, or on a terminal without NO_COLOR (https://no-color.org).
    static func colorEnabled(_ choice: ColorChoice, environment: Environment, isTerminal: Bool) -> Bool {
        switch choice {
        case .always: return true
        case .never: return false
        case .auto: return isTerminal && (environment["NO_COLOR"] ?? "").isEmpty && environment["TERM"] != "dumb"
        }
    }

    /// A line of data on stdout.
    func output(_ line: String) throws(SystemError) {
        guard let status, standardOutput.isTerminal else {
            try standardOutput.write(line + "\n")
            return
        }
        // Both on one terminal: the line goes above the status line, which is drawn again.
        try? standardError.write("\r\u{1B}[K")
        try? standardError.flush()
        try standardOutput.write(line + "\n")
        try standardOutput.flush()
        try? standardError.write(status)
        try? standardError.flush()
    }

    /// An error line on stderr ("imgcache: error: …").
    func error(_ message: String) {
        let label = useColor ? "\u{1B}[1;31merror:\u{1B}[0m" : "error:"
        emit("imgcache: \(label) \(message)")
    }

    /// A warning line on stderr ("imgcache: warning: …"), not shown with -q.
    func warning(_ message: String) {
        guard !quiet else { return }
        let label = useColor ? "\u{1B}[1;33mwarning:\u{1B}[0m" : "warning:"
        emit("imgcache: \(label) \(message)")
    }

    /// A note on stderr ("imgcache: note: …"), not shown with -q.
    func note(_ message: String) {
        guard !quiet else { return }
        emit("imgcache: note: \(message)")
    }

    /// A detail line on stderr, shown with -v.
    func detail(_ message: String) {
        guard verbosity > 0 else { return }
        emit("imgcache: \(message)")
    }

    /// Plain text on stderr (usage hints).
    func plain(_ message: String) {
        emit(message)
    }

    /// Shows `text` as the status line on stderr (a terminal), replacing the previous one.
    func showStatus(_ text: String) {
        status = text
        try? standardError.write("\r\u{1B}[K" + text)
        try? standardError.flush()
    }

    /// Removes the status line.
    func clearStatus() {
        guard status != nil else { return }
        status = nil
        try? standardError.write("\r\u{1B}[K")
        try? standardError.flush()
    }

    /// The terminal's width in columns (80 when unknown).
    var terminalWidth: Int {
        var size = winsize()
        guard ioctl(2, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
        return Int(size.ws_col)
    }

    private func emit(_ line: String) {
        // Messages must not wait behind buffered data, and a closed stderr is ignored.
        try? standardOutput.flush()
        try? standardError.write((status == nil ? "" : "\r\u{1B}[K") + line + "\n" + (status ?? ""))
        try? standardError.flush()
    }
}
