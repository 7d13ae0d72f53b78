#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCLI

/// The environment as a dictionary, read without Foundation (start-up cost matters).
func currentEnvironment() -> [String: String] {
    var result: [String: String] = [:]
    var entry = environ
    while let pointer = entry.pointee {
        let text = String(cString: pointer)
        if let equals = text.firstIndex(of: "=") {
            result[String(text[..<equals])] = String(text[text.index(after: equals)...])
        }
        entry += 1
    }
    return result
}

exit(CommandRunner.run(Array(CommandLine.arguments.dropFirst()), environment: currentEnvironment()))
