import Foundation
import ImgCacheCore

/// Read-only views of a cache folder for assertions.
enum CacheInspection {
    /// Relative paths of every regular file below `root`, sorted.
    static func files(under root: String) -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: root) else { return [] }
        var found: [String] = []
        for case let relative as String in walker {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: root + "/" + relative, isDirectory: &isDirectory), !isDirectory.boolValue {
                found.append(relative)
            }
        }
        return found.sorted()
    }

    /// `files(under:)` without each namespace's own bookkeeping (`lock`,
    /// `settings`, its `CACHEDIR.TAG`, the failed-URL records in `failed/`).
    static func storedFiles(under root: String) -> [String] {
        files(under: root).filter { relative in
            let parts = relative.split(separator: "/").map(String.init)
            return !["lock", "settings", "urls", "stats", "CACHEDIR.TAG"].contains(parts.last ?? "") && !parts.dropLast().contains("failed")
                && !(parts.count == 1 && parts[0].hasPrefix("secret-"))
        }
    }

    /// The failed-URL records of the namespace folder `directory`.
    /// The failed-URL list's files: URLs refused until they expire, not those only kept to say why a
    /// failure the next fetch tries again happened (see `retriedRecords`).
    static func failedRecords(inNamespace directory: String) -> [String] {
        files(under: directory + "/failed").filter { !$0.hasPrefix("tmp.") && !isOnlyRetried(directory + "/failed/" + $0) }
    }

    /// The files that hold only failures the next fetch tries again.
    static func retriedRecords(inNamespace directory: String) -> [String] {
        files(under: directory + "/failed").filter { !$0.hasPrefix("tmp.") && isOnlyRetried(directory + "/failed/" + $0) }
    }

    private static func isOnlyRetried(_ path: String) -> Bool {
        let failures = ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").filter { $0.hasPrefix("failure ") }
        let retried = [" " + String(repeating: "r", count: 32) + " ", " " + String(repeating: "p", count: 32) + " "]
        return !failures.isEmpty && failures.allSatisfy { line in retried.contains { line.contains($0) } }
    }

    /// The metadata of the entry whose image is at `imagePath`, as imgcache
    /// reads it (the attribute, its URL from the shard's log, or the sidecar
    /// file), in the text form.
    static func metadata(ofImage imagePath: String) -> String? {
        EntryMetadata.stored(atImage: imagePath)?.serialized()
    }

    /// Rewrites the file at `path` as a new file with the same bytes and no
    /// extended attributes, as a copy by a tool that drops them would.
    static func dropAttributes(_ path: String) throws {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        try FileManager.default.removeItem(atPath: path)
        try bytes.write(to: URL(fileURLWithPath: path))
    }

    /// Every problem with the entries under the namespace folder `directory`: an
    /// image file must have metadata naming its key and size, and hold exactly
    /// the bytes `expected` gives for that key (when it gives none, as for a
    /// thumbnail, a whole image). Empty when all is whole.
    static func problems(inNamespace directory: String, expected: (String) -> Data?) -> [String] {
        var problems: [String] = []
        for relative in files(under: directory) where !relative.hasPrefix("failed/") {
            let name = String(relative.split(separator: "/").last ?? "")
            guard name.count >= 32, !name.hasPrefix("tmp."), !name.hasSuffix(".meta"), relative.contains("/") else { continue }
            let path = directory + "/" + relative
            guard let metadata = metadata(ofImage: path) else { problems.append("\(relative): no metadata"); continue }
            let fields = Dictionary(metadata.split(separator: "\n").compactMap { line -> (String, String)? in
                guard let space = line.firstIndex(of: " ") else { return nil }
                return (String(line[..<space]), String(line[line.index(after: space)...]))
            }, uniquingKeysWith: { $1 })
            guard let key = fields["key"], let bytes = try? Data(contentsOf: URL(fileURLWithPath: path)) else {
                problems.append("\(relative): unreadable")
                continue
            }
            if fields["size"] != String(bytes.count) { problems.append("\(relative): size \(bytes.count), metadata says \(fields["size"] ?? "-")") }
            if let served = expected(key) {
                if bytes != served { problems.append("\(relative): bytes differ from what \(key) serves") }
            } else if let header = try? ImageHeader.probe([UInt8](bytes)),
                      ImageHeader.missingEnd(of: [UInt8](bytes), format: header.format) == nil {
                // A transformed image (no served bytes to compare): whole if it probes and ends as its format ends.
            } else {
                problems.append("\(relative): not a whole image")
            }
        }
        return problems
    }

    /// Names of temporary files under `root`.
    static func temporaryFiles(under root: String) -> [String] {
        files(under: root).filter { $0.split(separator: "/").last?.hasPrefix("tmp.") == true }
    }

    /// MD5 of `text` as lowercase hex, computed independently of imgcache (by md5sum).
    static func md5(_ text: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/md5sum")
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        input.fileHandleForWriting.write(Data(text.utf8))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(String(decoding: data, as: UTF8.self).prefix(32))
    }
}
