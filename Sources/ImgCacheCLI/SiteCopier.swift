#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCore

/// `fetch --output-dir`: the copies of one run, named from `--name`. It remembers which URL and
/// bytes each name was given to and which folders are made, so that two images never share a name
/// and each folder is checked once.
struct SiteCopier {
    let directory: String
    let template: CopyNameTemplate
    /// Which URL (as shown) and bytes (their SHA-256) each copy was written for in this run.
    private var owners: [String: (url: String, hash: String)] = [:]
    /// The folders made and checked in this run.
    private var readyFolders: Set<String> = []

    init(directory: String, template: CopyNameTemplate) {
        self.directory = directory
        self.template = template
    }

    /// Copies the files `result` shows (its variants, else the image) into the folder, each named from
    /// `--name`; returns them with their copies, and why those not made were not. A copy already holding
    /// the same bytes is left as it is (its time too). Two different images given one name (in this run,
    /// or by an earlier run's copy of another URL) are an error naming both URLs, and the second is not
    /// written: a template with the content's hash never gives one.
    mutating func copy(_ result: FetchResult, url: String, isCancelled: () -> Bool) -> (files: [FetchCommand.ShownFile], refused: [String]) {
        var refused: [String] = []
        var files = FetchCommand.shownFiles(of: result)
        // One URL, one stem (its first file's cached name stands in where the URL gives none).
        let urlStem = FetchCommand.remoteStem(url: url, cachedPath: files.first?.path ?? "")
        let copyKey = RemoteURL.redacted(URLText.withoutFragment(url))
        for index in files.indices {
            do throws(SystemError) {
                let path = files[index].path
                // A name holding the content's hash says what the copy holds: the bytes are hashed (streamed),
                // and a copy of that name and size is taken as theirs. Otherwise a small file is read once, for
                // its hash and for the comparison with the copy.
                let bytes = !template.namesContent && files[index].metadata.byteCount <= FetchCommand.readWhole
                    ? try FileSystem.readFile(path, limit: Int(FetchCommand.readWhole)) : nil
                let (name, hash) = try FetchCommand.copyName(of: files[index], bytes: bytes, url: url, urlStem: urlStem,
                                                             template: template)
                let target = directory + "/" + name
                let shown = RemoteURL.displayed(url)
                let format = files[index].metadata.format ?? ImageFormat(namedBy: path) ?? CodecRegistry.fallbackFormat
                if let problem = FetchCommand.unusableCopyName(name, format: format) {
                    refused.append("\(shown): not copied: \(problem)")
                    continue
                }
                // An SVG in a site is a page of its origin when opened on its own: only an inert one is copied.
                if format == .svg, let found = SVGActiveContent.activeContent(at: path) {
                    refused.append("\(shown): not copied: the SVG holds \(found), not to be copied into a site as it is; "
                                   + "give --format png (or --thumbnail) to copy a picture of it")
                    continue
                }
                if let owner = owners[target] {
                    // The same bytes under the same name (two sizes of a small image, one image at two URLs): one copy.
                    if owner.hash == hash {
                        files[index].copy = target
                        continue
                    }
                    let whose = owner.url == shown ? "another variant of \(shown)" : owner.url
                    refused.append("\(shown): not copied: \(ControlCharacters.escaped(target)) is \(whose)'s copy, another image; "
                               + "put {hash8} in --name to keep them apart")
                    continue
                }
                owners[target] = (shown, hash)
                // Each folder once a run: refused before it is made (nothing is left inside a namespace),
                // then made. A copy that is written is checked again, itself, as it is written.
                let folder = String(target[..<target.lastIndex(of: "/")!])
                if !readyFolders.contains(folder) {
                    // A folder a name makes (`{width}/…`) that is a link already is not followed out of the output folder.
                    var inside = directory
                    for part in name.split(separator: "/").dropLast() {
                        inside += "/" + part
                        if OutputFile.isLink(inside) {
                            throw SystemError("write", path: inside, errno: Errno(ELOOP),
                                              detail: "it is a link, and a copy's folder is never followed out of --output-dir")
                        }
                    }
                    try FetchCommand.refuseInsideACache(target)
                    try FileSystem.makeDirectories(folder, mode: 0o777, followingLinks: true)
                    readyFolders.insert(folder)
                }
                // A copy already holding these bytes is left as it is (its time too): a site rebuilt
                // from a warm cache rewrites nothing.
                let same = template.namesContent ? OutputFile.isFile(target, ofSize: files[index].metadata.byteCount)
                    : bytes.map { OutputFile.holds(target, bytes: $0) } ?? OutputFile.holdsSameBytes(target, as: path)
                if !same {
                    // A link where a copy goes is replaced, not written through: a site's folder holds its own files.
                    try OutputFile.removeLink(target)
                    // Another URL's copy, from an earlier run (its attribute says whose): a name without the hash
                    // never gives one image's copy to another.
                    let owner = (try? FileSystem.attribute(FetchCommand.copyOwnerAttribute, of: target, limit: 8192)).flatMap { $0 }
                        .map { SiteCopier.CopyOwner($0).key }
                    if let owner, owner != copyKey {
                        refused.append("\(shown): not copied: \(ControlCharacters.escaped(target)) is \(RemoteURL.displayed(owner))'s copy "
                                   + "(from an earlier run), another image; put {hash8} in --name to keep them apart")
                        continue
                    }
                    try FetchCommand.copy(files[index].path, to: target, isCancelled: isCancelled)
                    try? FileSystem.setAttribute(FetchCommand.copyOwnerAttribute, of: target, to: CopyOwner(key: copyKey, name: name).bytes)
                }
                files[index].copy = target
            } catch {
                refused.append("cannot copy \(RemoteURL.displayed(url)) into \(ControlCharacters.escaped(directory)): "
                           + (error.path.map { ControlCharacters.escaped($0) + ": " } ?? "") + error.reason)
            }
        }
        return (files, refused)
    }

    /// Whether the run named no copy at all (an empty list): a prune then would empty the folder.
    var namedNothing: Bool { owners.isEmpty }

    /// What a copy's attribute says: the URL (or variant) it was written for, and the name, inside the
    /// output folder, it was written under (copies of earlier versions say no name).
    struct CopyOwner {
        let key: String
        let name: String?

        init(key: String, name: String) {
            self.key = key
            self.name = name
        }

        /// Read from the attribute's bytes: the key, then a NUL and the name.
        init(_ bytes: [UInt8]) {
            if let zero = bytes.firstIndex(of: 0) {
                key = String(decoding: bytes[..<zero], as: UTF8.self)
                name = String(decoding: bytes[(zero + 1)...], as: UTF8.self)
            } else {
                key = String(decoding: bytes, as: UTF8.self)
                name = nil
            }
        }

        var bytes: [UInt8] { Array(key.utf8) + [0] + Array((name ?? "").utf8) }
    }

    /// Whether the file at `path` (`name` inside the output folder) is a copy imgcache wrote there: it
    /// carries the URL it was written for and the name it was written under. A file the site put there
    /// itself is never one, nor a copy of one made under another name (`cp -a` keeps the attribute).
    static func isCopy(_ path: String, name: String) -> Bool {
        guard let bytes = (try? FileSystem.attribute(FetchCommand.copyOwnerAttribute, of: path, limit: 8192)) ?? nil else { return false }
        return CopyOwner(bytes).name.map { $0 == name } ?? true
    }

    /// Removes the files under the folder that this run did not name, that the template could have
    /// made and that imgcache wrote (a copy no page of this run shows); links and other files are left. The names removed,
    /// relative to the folder. At most 100,000 entries are looked at, folders 16 deep.
    func prune() -> [String] {
        var removed: [String] = []
        var looked = 0
        func walk(_ relative: String, depth: Int) {
            guard depth <= 16, let items = try? DirectoryHandle(relative.isEmpty ? directory : directory + "/" + relative).list() else { return }
            for item in items.sorted(by: { $0.name < $1.name }) {
                looked += 1
                guard looked <= 100_000 else { return }
                let name = relative.isEmpty ? item.name : relative + "/" + item.name
                let path = directory + "/" + name
                // Not through a link (FileSystem.status looks at the entry itself).
                guard let status = (try? FileSystem.status(path)) ?? nil else { continue }
                if status.isDirectory {
                    walk(name, depth: depth + 1)
                } else if status.isRegularFile, owners[path] == nil, template.couldHaveMade(name), SiteCopier.isCopy(path, name: name), unlink(path) == 0 {
                    removed.append(name)
                }
            }
        }
        walk("", depth: 0)
        return removed
    }
}
