#if canImport(Glibc)
import Glibc
#endif
import CImgCacheShims
import ImgCacheCore
import Synchronization

/// Whether a source's host reaches a private address, for answers the cache already holds:
/// those make no connection for the download's own check to refuse, so a server that refuses
/// private sources would otherwise hand out what another process fetched from them. Each
/// answer is kept for a minute.
final class PrivateHosts: Sendable {
    private let known = Mutex<[String: (isPrivate: Bool, until: Double)]>([:])
    static let lifetime = 60.0

    /// True when `host` (a name or an address in any spelling) resolves to an address that is
    /// loopback, private, link-local, multicast, unspecified or reserved, or does not resolve.
    func reachesPrivate(_ host: String) -> Bool {
        let now = WallClock.monotonic()
        if let answer = known.withLock({ $0[host] }), answer.until > now { return answer.isPrivate }
        let name = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        var isPrivate = true
        if getaddrinfo(name, nil, &hints, &list) == 0 {
            isPrivate = false
            var entry = list
            while let current = entry {
                if let address = current.pointee.ai_addr, ic_address_is_private(address) != 0 { isPrivate = true }
                entry = current.pointee.ai_next
            }
            freeaddrinfo(list)
        }
        known.withLock { table in
            if table.count >= 4096 { table.removeAll(keepingCapacity: true) }
            table[host] = (isPrivate, now + PrivateHosts.lifetime)
        }
        return isPrivate
    }
}
