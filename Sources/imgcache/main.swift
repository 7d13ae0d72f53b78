#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCLI
import ImgCacheCore

/// The words after the program name, each byte that is not UTF-8 kept as
/// `%XX` (a URL with a Latin-1 byte is then asked for as it was typed).
func commandLineWords() -> [String] {
    (1..<Int(CommandLine.argc)).map { index in
        guard let word = CommandLine.unsafeArgv[index] else { return "" }
        return URLText.decode(UnsafeRawBufferPointer(start: word, count: strlen(word)))
    }
}

/// Overwrites secrets in the process's argument memory, as curl does, so that
/// `ps` and /proc/PID/cmdline no longer show them: the value of `-u
/// user:password`, and the password of a URL (`https://user:password@host`)
/// given as an operand, to `--remote` or to `--proxy`. The words already read
/// keep them. The words are scanned only when one could hold a secret.
func hideSecrets(of words: [String]) {
    guard words.contains(where: {
        $0.hasPrefix("--user") || ($0.utf8.first == UInt8(ascii: "-") && $0.utf8.contains(UInt8(ascii: "u")))
            || ($0.utf8.contains(UInt8(ascii: "@")) && $0.contains("://"))
    }) else { return }
    for (argument, offset, length) in CommandLineParser.secretLocations(in: words) {
        guard let word = CommandLine.unsafeArgv[argument + 1] else { continue }
        let size = strlen(word)
        guard offset < size else { continue }
        memset(word + offset, Int32(UInt8(ascii: "*")), min(length ?? size - offset, size - offset))
    }
}

// A decode worker (imgcache started again by itself) is nothing else: no parsing, no cache.
if CommandLine.argc >= 2, let first = CommandLine.unsafeArgv[1], String(cString: first) == DecodeWorkerMain.modeArgument {
    exit(DecodeWorkerMain.run(Array(CommandLine.arguments.dropFirst())))
}

// Under a tiny `ulimit -v` any allocation may fail, and Swift ends such a process with a signal:
// said before anything is allocated, with the status for a system that refused a resource.
if let limit = WorkerRegistry.addressSpaceTooSmall {
    let line = "imgcache: error: the address space is limited to \(limit >> 20) MiB (ulimit -v); imgcache needs at least "
        + "\(WorkerRegistry.smallestAddressSpace >> 20) MiB\n"
    _ = line.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
    exit(ExitStatus.systemError.rawValue)
}

// Under a limit, memory is kept in fewer reserved regions (one process, many threads).
WorkerRegistry.fitAddressSpace()

let words = commandLineWords()
hideSecrets(of: words)
let status = CommandRunner.run(words)
if status == ExitStatus.interrupted.rawValue || status == ExitStatus.terminated.rawValue {
    // A run stopped by a signal does not wait for variants still being made: leaving
    // this way ends their threads and removes the temporary files they were writing.
    fflush(nil)
    TemporaryFile.exitRemovingLiveFiles(status: status)
}
exit(status)
