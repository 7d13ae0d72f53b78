#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCLI
import ImgCacheCore

// The server program `imgcache serve` runs. A decode worker (this program started again by
// itself, for a variant) is nothing else.
if CommandLine.argc >= 2, let first = CommandLine.unsafeArgv[1], String(cString: first) == DecodeWorkerMain.modeArgument {
    exit(DecodeWorkerMain.run(Array(CommandLine.arguments.dropFirst())))
}

ServeProgram.setRunner { launch in ImageServer.run(launch) }
let words = ProcessArguments.words()
ProcessArguments.hideSecrets(of: words)
// Started as imgcache-serve with the words of `imgcache serve …`; by itself, the command is implied.
let status = CommandRunner.run(words.contains("serve") ? words : ["serve"] + words)
fflush(nil)
exit(status)
