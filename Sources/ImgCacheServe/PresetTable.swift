/// Named groups of processing options (`--presets FILE`, as imgproxy's IMGPROXY_PRESETS): a
/// line `NAME=OPTION/OPTION/…` each (`thumb=rs:fill:300:300/q:80`). A preset named `default`
/// applies to every request, before its own options.
public struct PresetTable: Equatable, Sendable {
    private var presets: [String: [ImgproxyPath.Option]] = [:]

    public init() {}

    /// Why a presets file cannot be read.
    public struct Problem: Error, Equatable, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// Reads a presets file; blank lines and lines starting with # are skipped.
    public init(fileText: String) throws(Problem) {
        for (number, line) in fileText.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let text = line.trimmingCharacters()
            if text.isEmpty || text.hasPrefix("#") { continue }
            guard let equals = text.firstIndex(of: "="), equals != text.startIndex else {
                throw Problem(description: "line \(number + 1) is not NAME=OPTIONS")
            }
            let name = String(text[..<equals]).trimmingCharacters()
            var options: [ImgproxyPath.Option] = []
            for segment in text[text.index(after: equals)...].split(separator: "/") {
                let parts = segment.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
                guard parts.count >= 2 else { throw Problem(description: "line \(number + 1): '\(segment)' is not OPTION:ARGUMENTS") }
                options.append(ImgproxyPath.Option(name: parts[0], arguments: Array(parts.dropFirst())))
            }
            guard presets[name] == nil else { throw Problem(description: "line \(number + 1): preset '\(name)' is defined twice") }
            presets[name] = options
        }
    }

    /// The options of the preset `name`, nil when there is none.
    public func options(named name: String) -> [ImgproxyPath.Option]? { presets[name] }

    /// The presets' names, sorted.
    public var names: [String] { presets.keys.sorted() }
}
