#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCore
import Synchronization

/// The process's command line as the commands read it, for imgcache and the server program alike.
public enum ProcessArguments {
    /// The words after the program name, each byte that is not UTF-8 kept as
    /// `%XX` (a URL with a Latin-1 byte is then asked for as it was typed).
    public static func words() -> [String] {
        let words = (1..<Int(CommandLine.argc)).map { index -> String in
            guard let word = CommandLine.unsafeArgv[index] else { return "" }
            return URLText.decode(UnsafeRawBufferPointer(start: word, count: strlen(word)))
        }
        read.withLock { if $0 == nil { $0 = words } }
        return words
    }

    /// The words as first read, before `hideSecrets` blanked any (what `serve` hands the server program).
    static var firstRead: [String]? { read.withLock { $0 } }
    private static let read = Mutex<[String]?>(nil)

    /// Overwrites secrets in the process's argument memory, as curl does, so that
    /// `ps` and /proc/PID/cmdline no longer show them: the value of `-u
    /// user:password`, and the password of a URL (`https://user:password@host`)
    /// given as an operand, to `--remote` or to `--proxy`. The words already read
    /// keep them. The words are scanned only when one could hold a secret.
    public static func hideSecrets(of words: [String]) {
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
}
