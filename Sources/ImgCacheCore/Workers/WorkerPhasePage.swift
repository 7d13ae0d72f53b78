#if canImport(Glibc)
import Glibc
#endif
import CImgCacheShims

/// A few bytes of memory a decode worker shares with imgcache, where the
/// worker writes what it is doing (decoding a format, transforming, encoding
/// one) as it goes. imgcache reads it only once the job has ended, so a job
/// costs one message each way however many phases it passes through; a
/// message per phase woke imgcache three more times per image. The worker
/// makes the page before it confines itself and hands it over with its
/// first message. Owned by one thread on each side: not Sendable.
final class WorkerPhasePage {
    /// The page's descriptor, until it is handed over (worker) or mapped (imgcache).
    private(set) var descriptor: Int32
    private let bytes: UnsafeMutableRawPointer

    /// What is written: a kind byte, then the format's name, NUL-ended.
    static let size = 64

    private init(descriptor: Int32, bytes: UnsafeMutableRawPointer) {
        self.descriptor = descriptor
        self.bytes = bytes
    }

    deinit {
        munmap(bytes, WorkerPhasePage.size)
        if descriptor >= 0 { SystemCall.close(descriptor) }
    }

    /// A new page (in the worker, before its filter is set); nil when memory cannot be had.
    static func create() -> WorkerPhasePage? {
        let descriptor = ic_memfd("imgcache-phase")
        guard descriptor >= 0 else { return nil }
        guard ftruncate(descriptor, off_t(size)) == 0 else {
            SystemCall.close(descriptor)
            return nil
        }
        return map(descriptor)
    }

    /// The page behind `descriptor` (in imgcache, as the worker handed it over); nil when it does
    /// not map. The descriptor is the page's from then on.
    static func map(_ descriptor: Int32) -> WorkerPhasePage? {
        // A worker could hand over anything: only a file at least as long as the page is read.
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_size >= off_t(size),
              let bytes = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0), bytes != MAP_FAILED else {
            SystemCall.close(descriptor)
            return nil
        }
        return WorkerPhasePage(descriptor: descriptor, bytes: bytes)
    }

    /// Closes the descriptor (sent, or no longer needed); the mapping stays.
    func closeDescriptor() {
        if descriptor >= 0 { SystemCall.close(descriptor) }
        descriptor = -1
    }

    /// The phase, as the worker last wrote it; `.starting` when what is there does not read.
    var phase: WorkerFailure.Phase {
        get {
            let kind = bytes.load(as: UInt8.self)
            var name: [UInt8] = []
            for offset in 1..<WorkerPhasePage.size {
                let byte = bytes.load(fromByteOffset: offset, as: UInt8.self)
                if byte == 0 { break }
                name.append(byte)
            }
            let format = ImageFormat(rawValue: String(decoding: name, as: UTF8.self))
            switch (kind, format) {
            case (1, .some(let format)): return .decoding(format)
            case (2, _): return .transforming
            case (3, .some(let format)): return .encoding(format)
            default: return .starting
            }
        }
        set {
            let (kind, format): (UInt8, ImageFormat?) = switch newValue {
            case .starting: (0, nil)
            case .decoding(let format): (1, format)
            case .transforming: (2, nil)
            case .encoding(let format): (3, format)
            }
            let name = Array((format?.rawValue ?? "").utf8.prefix(WorkerPhasePage.size - 2))
            bytes.storeBytes(of: kind, as: UInt8.self)
            for (offset, byte) in name.enumerated() { bytes.storeBytes(of: byte, toByteOffset: offset + 1, as: UInt8.self) }
            bytes.storeBytes(of: 0, toByteOffset: name.count + 1, as: UInt8.self)
        }
    }
}

@available(*, unavailable)
extension WorkerPhasePage: Sendable {}
