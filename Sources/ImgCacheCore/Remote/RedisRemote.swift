import CImgCacheShims
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Redis as a remote store, through hiredis (loaded on first use): `GET`,
/// `SET key value NX EX ttl` and `DEL` of `imgcache:v1:<namespace>:<md5>`.
/// One connection, owned by a thread of its own; requests queued meanwhile go
/// out together, pipelined, and their replies are read in order, so a
/// prefetch's lookups cost one round trip per batch, not per URL.
/// The connection lives only on the worker thread.
final class RedisRemote: RemoteBackend, Sendable {
    let spec: RemoteSpec
    private enum Operation {
        case get(RemoteKey, limit: Int, @Sendable (Result<[UInt8]?, RemoteFailure>, Double) -> Void)
        case put(RemoteKey, [UInt8], replacing: Bool, @Sendable (Result<Bool, RemoteFailure>, Double) -> Void)
        case delete(RemoteKey, @Sendable (Result<Void, RemoteFailure>) -> Void)
        case stop
    }

    private let operations = BlockingQueue<Operation>()
    private let thread = WorkerThread()
    private let socket = ConnectionSocket()
    private let password: String?
    private let user: String?

    init(spec: RemoteSpec, environment: Environment) throws(RemoteFailure) {
        self.spec = spec
        var error = [CChar](repeating: 0, count: 256)
        guard ic_redis_load(&error, error.count) == 0 else { throw RemoteFailure(RedisRemote.text(error)) }
        let fromEnvironment = try RemoteBackends.secret(environment: spec.passwordEnvironment, file: nil, from: environment, timeout: spec.timeout)
        if case .redis(_, _, _, let user, let password) = spec.kind {
            self.user = user
            self.password = fromEnvironment ?? password
        } else {
            self.user = nil
            self.password = fromEnvironment
        }
        let operations = self.operations
        let worker = Worker(spec: spec, user: user, password: password, socket: socket)
        do {
            try thread.start { worker.run(operations) }
        } catch {
            throw RemoteFailure("cannot start a thread: \(error)")
        }
    }

    func get(_ key: RemoteKey, limit: Int, completion: @escaping @Sendable (Result<[UInt8]?, RemoteFailure>, Double) -> Void) {
        operations.push(.get(key, limit: limit, completion))
    }

    func put(_ key: RemoteKey, _ object: [UInt8], replacing: Bool,
             completion: @escaping @Sendable (Result<Bool, RemoteFailure>, Double) -> Void) {
        let socket = self.socket
        socket.writes.add(1, ordering: .relaxed)
        operations.push(.put(key, object, replacing: replacing) { result, seconds in
            socket.writes.subtract(1, ordering: .relaxed)
            completion(result, seconds)
        })
    }

    func delete(_ key: RemoteKey, completion: @escaping @Sendable (Result<Void, RemoteFailure>) -> Void) {
        operations.push(.delete(key, completion))
    }

    /// Given up (slow, or failing): what it owes fails now, not after its timeout.
    func abandon() {
        interrupt(droppingWrites: true)
    }

    /// The worker may be blocked reading replies for up to the store's timeout: its
    /// socket is shut down, so that the read ends now and every request still owed
    /// (and any later one) fails at once.
    func interrupt(droppingWrites: Bool) {
        guard droppingWrites || socket.writes.load(ordering: .relaxed) == 0 else { return }
        socket.shutDown()
    }

    func close() {
        operations.push(.stop)
        thread.join()
    }

    fileprivate static func text(_ error: [CChar]) -> String {
        String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The shim's message, a timeout named with the value that ran out (as for downloads).
    fileprivate static func text(_ error: [CChar], timeout: Double, connecting: Bool = false) -> String {
        let message = text(error)
        guard message == "timed out" else { return message }
        return (connecting ? "connect timed out after " : "timed out after ") + DownloadError.formatSeconds(timeout)
    }

    /// The worker thread's side: the connection and the pipelined batches.
    /// Not Sendable: it is handed to the worker thread (`sending`) and the
    /// compiler sees that nothing else keeps it.
    private final class Worker {
        let spec: RemoteSpec
        let user: String?
        let password: String?
        /// The hiredis context; only the worker thread touches it.
        private var connection: UnsafeMutableRawPointer?
        /// Once the connection failed, every later request fails at once with this.
        private var broken: RemoteFailure?

        let socket: ConnectionSocket

        init(spec: RemoteSpec, user: String?, password: String?, socket: ConnectionSocket) {
            self.spec = spec
            self.user = user
            self.password = password
            self.socket = socket
        }

        func run(_ operations: BlockingQueue<Operation>) {
            defer {
                if let connection {
                    socket.forget()
                    ic_redis_free(connection)
                }
            }
            while true {
                var batch = [operations.pop()]
                while batch.count < 512, let next = operations.tryPop() { batch.append(next) }
                let stopping = batch.contains { if case .stop = $0 { return true } else { return false } }
                serve(batch.filter { if case .stop = $0 { return false } else { return true } })
                if stopping {
                    broken = RemoteFailure("closed")
                    while let left = operations.tryPop() { serve([left]) }
                    return
                }
            }
        }

        private func serve(_ batch: [Operation]) {
            guard !batch.isEmpty else { return }
            if socket.isShutDown { broken = broken ?? RemoteFailure("interrupted") }
            if broken == nil, connection == nil { connect() }
            guard let connection, broken == nil else {
                for operation in batch { fail(operation, broken ?? RemoteFailure("not connected")) }
                return
            }
            for operation in batch {
                switch operation {
                case .get(let key, let limit, _) where limit < RemoteObject.maximumLength:
                    // At most one byte past the limit comes back: enough to tell it is over.
                    // (A missing key reads as empty, which no object is.)
                    append(connection, ["GETRANGE", key.redisKey, "0", String(limit)].map { Array($0.utf8) })
                case .get(let key, _, _): append(connection, ["GET", key.redisKey].map { Array($0.utf8) })
                case .put(let key, let object, let replacing, _):
                    // NX: an object another machine wrote first is as good; a damaged one is replaced.
                    append(connection, [Array("SET".utf8), Array(key.redisKey.utf8), object] + (replacing ? [] : [Array("NX".utf8)])
                                        + [Array("EX".utf8), Array(String(max(1, Int(spec.timeToLive))).utf8)])
                case .delete(let key, _): append(connection, ["DEL", key.redisKey].map { Array($0.utf8) })
                case .stop: break
                }
            }
            // A lookup is timed from the batch going out to its own reply.
            let sent = WallClock.monotonic()
            for (index, operation) in batch.enumerated() {
                var value = ic_redis_value()
                var error = [CChar](repeating: 0, count: 256)
                guard let reply = ic_redis_reply(connection, &value, &error, error.count) else {
                    let failure = RemoteFailure(RedisRemote.text(error, timeout: spec.timeout))
                    broken = failure
                    for rest in batch[index...] { fail(rest, failure) }
                    return
                }
                answer(operation, value, seconds: WallClock.monotonic() - sent)
                ic_redis_free_reply(reply)
            }
        }

        private func connect() {
            var error = [CChar](repeating: 0, count: 256)
            let connectMilliseconds = Int(spec.connectTimeout * 1000), replyMilliseconds = Int(spec.timeout * 1000)
            let context: UnsafeMutableRawPointer?
            var database = 0
            switch spec.kind {
            case .redis(let host, let port, let number, _, _):
                context = ic_redis_connect_tcp(host, Int32(port), connectMilliseconds, replyMilliseconds, &error, error.count)
                database = number
            case .redisSocket(let path, let number):
                context = ic_redis_connect_unix(path, connectMilliseconds, replyMilliseconds, &error, error.count)
                database = number
            default:
                context = nil
            }
            guard let context else {
                broken = RemoteFailure("cannot connect: " + RedisRemote.text(error, timeout: spec.connectTimeout, connecting: true))
                return
            }
            connection = context
            guard socket.remember(ic_redis_fd(context)) else {
                broken = RemoteFailure("interrupted")
                return
            }
            var setup: [[String]] = []
            if let password { setup.append(user.map { ["AUTH", $0, password] } ?? ["AUTH", password]) }
            if database != 0 { setup.append(["SELECT", String(database)]) }
            for command in setup { append(context, command.map { Array($0.utf8) }) }
            for command in setup {
                var value = ic_redis_value()
                guard let reply = ic_redis_reply(context, &value, &error, error.count) else {
                    broken = RemoteFailure(RedisRemote.text(error, timeout: spec.timeout))
                    return
                }
                defer { ic_redis_free_reply(reply) }
                if value.type == 6 {
                    // The reply may repeat what was sent: it never names the password.
                    broken = RemoteFailure(command[0] == "AUTH" ? "authentication refused (check the password)" : Worker.string(value))
                    return
                }
            }
        }

        private func append(_ connection: UnsafeMutableRawPointer, _ arguments: [[UInt8]]) {
            var pointers: [UnsafePointer<CChar>?] = []
            var lengths: [Int] = []
            let buffers = arguments.map { bytes -> UnsafeMutablePointer<CChar> in
                let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: max(1, bytes.count))
                bytes.withUnsafeBytes { raw in
                    if let base = raw.baseAddress { buffer.withMemoryRebound(to: UInt8.self, capacity: bytes.count) { $0.update(from: base.assumingMemoryBound(to: UInt8.self), count: bytes.count) } }
                }
                return buffer
            }
            defer { for buffer in buffers { buffer.deallocate() } }
            for (buffer, bytes) in zip(buffers, arguments) {
                pointers.append(UnsafePointer(buffer))
                lengths.append(bytes.count)
            }
            _ = pointers.withUnsafeMutableBufferPointer { argv in
                lengths.withUnsafeBufferPointer { ic_redis_append(connection, Int32(arguments.count), argv.baseAddress, $0.baseAddress) }
            }
        }

        private static func string(_ value: ic_redis_value) -> String {
            guard let bytes = value.bytes else { return "" }
            return String(decoding: UnsafeRawBufferPointer(start: bytes, count: value.length), as: UTF8.self)
        }

        /// Hands a reply to whoever asked (types: 1 string, 3 integer, 4 nil, 5 status, 6 error).
        private func answer(_ operation: Operation, _ value: ic_redis_value, seconds: Double) {
            let error: RemoteFailure? = value.type == 6 ? RemoteFailure("Redis: " + Worker.string(value)) : nil
            switch operation {
            case .get(_, let limit, let completion):
                if let error { return completion(.failure(error), seconds) }
                switch value.type {
                case 1:
                    if value.length > limit { return completion(.failure(.tooLarge(limit: limit)), seconds) }
                    if value.length == 0 { return completion(.success(nil), seconds) }
                    let bytes = value.bytes.map { [UInt8](UnsafeRawBufferPointer(start: $0, count: value.length)) } ?? []
                    completion(.success(bytes), seconds)
                case 4: completion(.success(nil), seconds)
                default: completion(.failure(RemoteFailure("unexpected Redis reply")), seconds)
                }
            case .put(_, _, _, let completion):
                // SET ... NX answers nil when the key is there already: written by someone else, kept.
                completion(error.map { .failure($0) } ?? .success(value.type != 4), seconds)
            case .delete(_, let completion):
                completion(error.map { .failure($0) } ?? .success(()))
            case .stop: break
            }
        }

        private func fail(_ operation: Operation, _ failure: RemoteFailure) {
            switch operation {
            case .get(_, _, let completion): completion(.failure(failure), 0)
            case .put(_, _, _, let completion): completion(.failure(failure), 0)
            case .delete(_, let completion): completion(.failure(failure))
            case .stop: break
            }
        }
    }
}

/// The Redis connection's socket as other threads may reach it: to shut it down
/// when the run is interrupted, while the worker is blocked reading replies.
/// The worker forgets the descriptor before freeing the connection, under the
/// same lock, so a shutdown never reaches a descriptor reused for another file.
private final class ConnectionSocket: Sendable {
    private let state = Mutex<(descriptor: Int32, shutDown: Bool)>((-1, false))
    /// Writes handed to the worker and not yet answered.
    let writes = Atomic<Int>(0)

    /// Keeps the connected socket; false (the connection is not to be used) when the run was interrupted meanwhile.
    func remember(_ descriptor: Int32) -> Bool {
        state.withLock { state in
            guard !state.shutDown else { return false }
            state.descriptor = descriptor
            return true
        }
    }

    func forget() {
        state.withLock { $0.descriptor = -1 }
    }

    var isShutDown: Bool { state.withLock { $0.shutDown } }

    func shutDown() {
        state.withLock { state in
            state.shutDown = true
            if state.descriptor >= 0 { _ = Glibc.shutdown(state.descriptor, Int32(SHUT_RDWR)) }
        }
    }
}
