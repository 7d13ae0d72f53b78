#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCore
import ImgCacheServe
import NIOCore
import NIOHTTP1

/// Reads one HTTP request at a time (the pipelining handler before it holds the next), routes
/// it (`/health`, `/metrics`, else an image), and sends the answer: from memory as bytes, from
/// a file with sendfile. Request bodies are refused; a malformed or oversized head is answered
/// 400 or 431 and the connection closed.
final class RequestHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let server: ServerContext
    private let state: ConnectionState
    private var head: HTTPRequestHead?
    private var started = 0.0
    /// Whether the request carried a body, which is refused (and the connection closed after).
    private var refusedBody = false
    /// The handler's place in its pipeline, while it is in one.
    private(set) var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    init(server: ServerContext, state: ConnectionState) {
        self.server = server
        self.state = state
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            state.headArrived()
            self.head = head
            started = WallClock.monotonic()
            let length = head.headers.first(name: "content-length").flatMap { Int($0) } ?? 0
            refusedBody = length > 0 || head.headers.contains(name: "transfer-encoding")
        case .body:
            break
        case .end:
            guard let head else { return }
            if refusedBody {
                return send(.error(413, "request bodies are refused"), head: head, context: context, close: true)
            }
            route(head, context: context)
        }
    }

    private func route(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        guard head.method == .GET || head.method == .HEAD else {
            var answer = ServeResponse.error(405, "only GET and HEAD")
            answer.headers.append(("Allow", "GET, HEAD"))
            return send(answer, head: head, context: context)
        }
        var path = head.uri
        // An absolute-form target (through a proxy) is read for its path.
        if path.hasPrefix("http://") || path.hasPrefix("https://"),
           let start = path.utf8.indices.dropFirst(8).first(where: { path.utf8[$0] == UInt8(ascii: "/") }) {
            path = String(path[start...])
        }
        if let query = path.firstIndex(of: "?") { path = String(path[..<query]) }
        switch path {
        case "/health":
            return send(ServeResponse(status: 200, headers: [("Content-Type", "text/plain"), ("Cache-Control", "no-store")],
                                      body: .bytes(Array((server.draining ? "draining\n" : "ok\n").utf8))),
                        head: head, context: context)
        case "/metrics":
            let text = server.service.metrics.text(memory: server.service.memory.usage, memoryBudget: server.service.memory.budget)
            return send(ServeResponse(status: 200, headers: [("Content-Type", "text/plain; version=0.0.4"), ("Cache-Control", "no-store")],
                                      body: .bytes(Array(text.utf8))), head: head, context: context)
        case "/", "/favicon.ico", "/robots.txt":
            return send(.error(404, "not found"), head: head, context: context)
        default: break
        }
        var request = ImageService.Request(method: head.method == .HEAD ? "HEAD" : "GET", path: path,
                                           accept: head.headers.first(name: "accept"),
                                           ifNoneMatch: head.headers.first(name: "if-none-match"))
        let channel = context.channel
        request.abandoned = { !channel.isActive }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let boundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        let eventLoop = context.eventLoop
        server.requestStarted()
        server.service.respond(request) { answer in
            if eventLoop.inEventLoop {
                bound.value.send(answer, head: head, context: boundContext.value)
                bound.value.server.requestEnded()
            } else {
                eventLoop.execute {
                    bound.value.send(answer, head: head, context: boundContext.value)
                    bound.value.server.requestEnded()
                }
            }
        }
    }

    private func send(_ answer: ServeResponse, head: HTTPRequestHead, context: ChannelHandlerContext, close: Bool = false) {
        guard context.channel.isActive else {
            if case .file(let descriptor, _) = answer.body { Glibc.close(descriptor) }
            state.answered()
            return
        }
        let keepAlive = head.isKeepAlive && !close && !server.draining
        var headers = HTTPHeaders(answer.headers)
        var length = 0
        switch answer.body {
        case .empty: length = 0
        case .bytes(let bytes): length = bytes.count
        case .shared(let shared): length = shared.count
        case .file(_, let size): length = size
        case .length(let size): length = size
        }
        if answer.status != 304 { headers.replaceOrAdd(name: "Content-Length", value: String(length)) }
        headers.replaceOrAdd(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        let isHead = head.method == .HEAD
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: HTTPResponseStatus(statusCode: answer.status),
                                                             headers: headers))), promise: nil)
        var sent = 0
        var bodyWritten: EventLoopFuture<Void>?
        switch answer.body {
        case .bytes(let bytes) where !isHead && answer.status != 304:
            var buffer = context.channel.allocator.buffer(capacity: bytes.count)
            buffer.writeBytes(bytes)
            bodyWritten = context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(buffer))))
            sent = bytes.count
        case .shared(let shared) where !isHead && answer.status != 304:
            // Made once per variant and shared: no copy of its bytes per answer.
            let buffer = shared.converted { ByteBuffer(bytes: $0) }
            bodyWritten = context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(buffer))))
            sent = shared.count
        case .file(let descriptor, let size):
            let handle = NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: descriptor)
            let region = FileRegion(fileHandle: handle, readerIndex: 0, endIndex: size)
            let written = context.writeAndFlush(wrapOutboundOut(.body(.fileRegion(region))))
            written.whenComplete { _ in try? handle.close() }
            bodyWritten = written
            sent = size
        default: break
        }
        // The answer ends (and the next pipelined request is read) once its body has left for the
        // socket: a client that sends requests and reads no answer holds one answer, not one per request.
        let channel = context.channel
        let state = self.state
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let finish: () -> Void = {
            let ended = bound.value.context?.writeAndFlush(bound.value.wrapOutboundOut(.end(nil)))
            state.answered()
            if !keepAlive {
                if let ended { ended.whenComplete { _ in channel.close(promise: nil) } } else { channel.close(promise: nil) }
            }
        }
        if let bodyWritten {
            bodyWritten.assumeIsolated().whenComplete { _ in finish() }
        } else {
            finish()
        }
        let remote = context.remoteAddress.map(RequestHandler.describe) ?? "-"
        server.log.write(AccessLog.Line(remote: remote, method: head.method.rawValue, target: RequestHandler.logged(head.uri),
                                        version: "HTTP/\(head.version.major).\(head.version.minor)", status: answer.status,
                                        bytes: sent, referer: head.headers.first(name: "referer"),
                                        userAgent: head.headers.first(name: "user-agent"), seconds: WallClock.monotonic() - started,
                                        tier: answer.headers.first { $0.0 == "X-Imgcache" }?.1, error: answer.errorLine))
        server.service.metrics.answered(status: answer.status, seconds: WallClock.monotonic() - started)
        if answer.status == 304 { server.service.metrics.served(from: .notModified) }
        self.head = nil
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // What the decoder could not read: said once, then the connection is closed.
        guard let parserError = error as? HTTPParserError else {
            context.close(promise: nil)
            return
        }
        let status = parserError == .headerOverflow ? 431 : 400
        let message = status == 431 ? "request head too large" : "malformed request"
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "-")
        // Timed from now: no head was read, so nothing started the clock.
        if self.head == nil { started = WallClock.monotonic() }
        if !state.answering {
            send(.error(status, message), head: head, context: context, close: true)
        } else {
            context.close(promise: nil)
        }
    }

    /// The request target as the log shows it: a source's password as `***`, also in a source
    /// written percent-encoded whole (`http%3A%2F%2Fuser%3Apassword%40host`), which is logged decoded.
    static func logged(_ target: String) -> String {
        let encodedScheme = target.lowercased().contains("%3a%2f%2f")
        let text = encodedScheme ? (ImgproxyPath.percentDecoded(target) ?? target) : target
        return RemoteURL.redactingPasswords(in: text)
    }

    static func describe(_ address: SocketAddress) -> String {
        switch address {
        case .v4, .v6: return address.ipAddress ?? "-"
        case .unixDomainSocket: return "unix"
        }
    }
}
