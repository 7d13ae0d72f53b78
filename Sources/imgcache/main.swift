#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCLI
import ImgCacheCore

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

let words = ProcessArguments.words()
ProcessArguments.hideSecrets(of: words)
let status = CommandRunner.run(words)
if status == ExitStatus.interrupted.rawValue || status == ExitStatus.terminated.rawValue {
    // A run stopped by a signal does not wait for variants still being made: leaving
    // this way ends their threads and removes the temporary files they were writing.
    fflush(nil)
    TemporaryFile.exitRemovingLiveFiles(status: status)
}
exit(status)
