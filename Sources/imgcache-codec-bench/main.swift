// imgcache-codec-bench MODE DIRECTORY [WxH OUTPUT]: the codec work of imgcache
// over every image file of DIRECTORY, for `make bench` to time against Pillow
// and vipsthumbnail. Prints how many images it handled (and exits 1 if any
// failed), so the benchmark can check that both sides did the same work.
//   probe      read each file's header (64 KB, a GIF whole) and probe it
//   decode     decode every pixel of every frame
//   thumbnail  decode, fit inside WxH, encode as JPEG into OUTPUT
#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCore

let arguments = CommandLine.arguments
guard arguments.count >= 3, ["probe", "decode", "thumbnail"].contains(arguments[1]) else {
    try? FileSystem.writeAll(2, Array("usage: imgcache-codec-bench probe|decode|thumbnail DIRECTORY [WxH OUTPUT]\n".utf8), path: "stderr")
    exit(64)
}
let mode = arguments[1], directory = arguments[2]
let box = arguments.count > 3 ? ImageTransform.BoxSize(parsing: arguments[3]) : nil
let output = arguments.count > 4 ? arguments[4] : nil
if mode == "thumbnail" && (box == nil || output == nil) {
    try? FileSystem.writeAll(2, Array("thumbnail needs WxH and an output folder\n".utf8), path: "stderr")
    exit(64)
}

var handled = 0, failed = 0
let names = (try? DirectoryHandle(directory).list().map(\.name).filter { !$0.hasSuffix(".txt") }.sorted()) ?? []
for name in names {
    let path = directory + "/" + name
    if mode == "probe" {
        // As a header reader does: the first 64 KB, the whole file only when the
        // header needs more (a GIF's frames are counted by walking its blocks).
        if let prefix = try? FileSystem.readPrefix(path, count: 64 << 10), ImageFormat.sniff(prefix) != .gif,
           (try? ImageHeader.probe(prefix)) != nil {
            handled += 1
            continue
        }
    }
    guard let bytes = try? FileSystem.readFile(path, limit: 64 << 20) else { failed += 1; continue }
    switch mode {
    case "probe":
        if (try? ImageHeader.probe(bytes)) != nil { handled += 1 } else { failed += 1 }
    case "decode":
        if (try? ImageDecoder.decode(bytes)) != nil { handled += 1 } else { failed += 1 }
    default:
        var transform = ImageTransform(thumbnail: box, format: .jpeg)
        transform.quality = 75
        guard let header = try? ImageHeader.probe(bytes),
              let image = try? transform.decodeSource(bytes, header: header, maximumPixels: .standard),
              let result = try? transform.apply(to: image, shown: ImageTransform.shownSize(of: header)) else {
            failed += 1
            continue
        }
        let descriptor = open(output! + "/" + name + ".jpg", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0, (try? FileSystem.writeAll(descriptor, result.bytes, path: name)) != nil else { failed += 1; continue }
        close(descriptor)
        handled += 1
    }
}
print("\(mode): \(handled) images, \(failed) failed")
exit(failed == 0 ? 0 : 1)
