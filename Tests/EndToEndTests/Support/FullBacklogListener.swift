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
        let listening = try FullBacklogListener.listening(backlog: 0)
        let listener = listening.descriptor
        var address = listening.address
        descriptors.append(listener)
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

    /// A socket listening on a free 127.0.0.1 port that never accepts, and its address: the
    /// kernel completes up to `backlog` (+1) handshakes and queues what those clients send.
    static func listening(backlog: Int32) throws -> (descriptor: Int32, address: sockaddr_in) {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw FaultServer.SocketError(call: "socket", code: errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) == 0 && getsockname(listener, $0, &length) == 0 }
        }
        guard bound, listen(listener, backlog) == 0 else {
            close(listener)
            throw FaultServer.SocketError(call: "bind/listen", code: errno)
        }
        return (listener, address)
    }
}
