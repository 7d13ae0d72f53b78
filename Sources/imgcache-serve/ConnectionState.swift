import NIOCore

/// What a connection's handlers share about it, on its event loop only: whether a request head
/// is awaited (the head's deadline runs from its first byte), and whether a request is being
/// answered (an idle connection is closed, a busy one never).
final class ConnectionState {
    var awaitingHead = true
    var answering = false
    var headDeadline: Scheduled<Void>?

    /// A head has come whole: its deadline is off.
    func headArrived() {
        awaitingHead = false
        answering = true
        headDeadline?.cancel()
        headDeadline = nil
    }

    /// The answer is sent: the next head may start.
    func answered() {
        answering = false
        awaitingHead = true
    }
}

/// Closes a connection whose request head takes longer than the deadline from its first byte
/// (a slowloris client trickling headers), and one idle past it between requests. It sits
/// before the HTTP decoder and only watches bytes go by.
final class HeadDeadline: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = NIOAny
    typealias OutboundOut = NIOAny

    private let state: ConnectionState
    private let timeout: TimeAmount

    init(state: ConnectionState, timeout: TimeAmount) {
        self.state = state
        self.timeout = timeout
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if state.awaitingHead, state.headDeadline == nil {
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            state.headDeadline = context.eventLoop.scheduleTask(in: timeout) {
                bound.value.close(promise: nil)
            }
        }
        context.fireChannelRead(data)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // No byte for the whole timeout: closed when no answer is being made.
        if let idle = event as? IdleStateHandler.IdleStateEvent, idle == .read {
            if !state.answering { context.close(promise: nil) }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        state.headDeadline?.cancel()
        state.headDeadline = nil
        context.fireChannelInactive()
    }
}
