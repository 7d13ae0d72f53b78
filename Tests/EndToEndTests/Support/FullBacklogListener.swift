import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A loopback port whose accept queue is full: it listens but never accepts,
/// and a few connections fill its backlog, so the kernel drops every later SYN.
/// A client's connect hangs until its own timeout, as behind a firewall that
/// drops packets.
final class FullBacklogListener {
    let port: Int
    private var descriptors: [Int32] = []

    init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw FaultServer.SocketError(call: "socket", code: errno) }
        descriptors.append(listener)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) == 0 && getsockname(listener, $0, &length) == 0 }
        }
        guard bound, listen(listener, 0) == 0 else { throw FaultServer.SocketError(call: "bind/listen", code: errno) }
        port = Int(UInt16(bigEndian: address.sin_port))
        // A backlog of 0 still queues one connection; the others wait in SYN_SENT, which fills nothing more.
        for _ in 0..<3 {
            let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard client >= 0 else { continue }
            descriptors.append(client)
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
    }

    deinit {
        for descriptor in descriptors { close(descriptor) }
    }
}
