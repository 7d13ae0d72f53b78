#if canImport(Glibc)
import Glibc
#endif
import CImgCacheShims

/// One decode worker as the thread that drives it sees it: started on its
/// first job (imgcache's binary run again in worker mode), given each job's
/// limits from outside (`prlimit` on its address space and CPU time) before
/// the job goes out, watched with the job's wall-clock deadline (SIGKILL when
/// it passes), and replaced after any failure. What a library prints in it
/// is kept (`printed`) for `-v`. Owned by one thread: not Sendable.
package final class DecodeWorkerProcess {
    /// What bounds each job.
    let limits: DecodeLimits
    /// The lines the worker's libraries printed during the last job.
    private(set) var printed: [String] = []

    private var worker: Running?

    private struct Running {
        let pid: Int32
        let channel: Int32
        let output: Int32
        /// Where it writes what it is doing.
        var page: WorkerPhasePage?
        /// Its address space when it last said (what a job's limit is added to).
        var addressSpace: Int
        /// At start, to tell a worker that keeps growing.
        let startingAddressSpace: Int
        var cpuMilliseconds = 0
        var jobs = 0
        /// The soft limits last set on it (nil: none yet): set again only when a job needs others.
        var memoryLimit: UInt64?
        var cpuLimit: UInt64?
    }

    /// Jobs a worker takes before it is replaced, and how far its address space may grow between
    /// jobs: what libraries keep between images (caches, fragments) stays bounded.
    static let jobsPerWorker = 500
    static let growthAllowed = 1 << 30
    /// Address space allowed beyond a job's budget: libraries loaded on first use, thread stacks.
    static let slack = 256 << 20
    /// How long a new worker may take to say it is ready.
    static let startTimeout = 10.0

    package init(limits: DecodeLimits) {
        self.limits = limits
    }

    /// imgcache's own hard address-space limit (ulimit -v), which its workers inherit; read on the
    /// first job (a run that decodes nothing never asks), once, as it can only be lowered.
    private lazy var ownHardLimit: UInt64 = ic_own_limit(ic_limit_names(0), 1)

    /// Address-space limits are set in steps of this much, so that one job after another mostly
    /// needs no new one (what a job may take is its budget and the slack, not to the byte).
    static let limitStep: UInt64 = 16 << 20

    deinit {
        close()
        if receivedDescriptor >= 0 { SystemCall.close(receivedDescriptor) }
    }

    /// Runs `job` on the bytes behind `body` within the memory `limits` allow for `estimate` bytes
    /// (beyond what the worker already holds) and the time limit; what it made, or why not.
    func run(_ job: DecodeJob, body: Int32, estimate: Int) -> Result<DecodeResult, DecodeFailure> {
        printed = []
        guard !WorkerRegistry.shared.isStopping else { return .failure(.interrupted) }
        var running: Running
        switch start() {
        case .success(let started): running = started
        case .failure(let failure): return .failure(failure)
        }
        // Its size as the kernel counts it, not as it says: a worker a hostile image took over
        // could claim any size to be given room.
        var size = Int(clamping: ic_address_space(running.pid))
        if size > running.startingAddressSpace + DecodeWorkerProcess.growthAllowed {
            // Grown past what a job leaves behind (a library's caches, fragments): a fresh worker.
            close()
            switch start() {
            case .success(let started): running = started
            case .failure(let failure): return .failure(failure)
            }
            size = Int(clamping: ic_address_space(running.pid))
        }
        let addressSpace = size > 0 ? size : running.addressSpace
        // Within what imgcache itself may map (ulimit -v), which its workers inherit.
        limit = limits.budget(forEstimate: estimate)
        let hard = ownHardLimit
        if hard != UInt64.max, Int(clamping: hard) - addressSpace - DecodeWorkerProcess.slack < limit.bytes {
            let left = Int(clamping: hard) - addressSpace - DecodeWorkerProcess.slack
            // Too little to decode anything: the system's limit, as when no worker starts (exit 71).
            guard left >= DecodeLimits.smallestMemory / 2 else {
                return fail(.cannotStart("imgcache's own address-space limit (ulimit -v) leaves \(ByteSize.humanisedBinary(max(0, left))) "
                                         + "for decoding"), .starting, replace: false)
            }
            limit = (left, .inherited)
        }
        let step = DecodeWorkerProcess.limitStep
        let memory = (UInt64(addressSpace + DecodeWorkerProcess.slack + limit.bytes) + step - 1) / step * step
        let seconds = limits.seconds
        // The limits go on before the job does: from then on the worker cannot change them. The CPU
        // limit is set a job's time ahead, and again once a job could pass it: the wall-clock
        // deadline (SIGKILL) bounds each job, the CPU limit is the second line.
        let cpuNeeded = UInt64(running.cpuMilliseconds / 1000) + UInt64(seconds.rounded(.up)) + 1
        if running.memoryLimit != memory {
            guard ic_limit_process(running.pid, ic_limit_names(0), memory) == 0 else {
                return fail(.brokenProtocol("its limits cannot be set"), .starting)
            }
            running.memoryLimit = memory
        }
        if (running.cpuLimit ?? 0) < cpuNeeded {
            let cpu = cpuNeeded + UInt64(seconds.rounded(.up))
            guard ic_limit_process(running.pid, ic_limit_names(1), cpu) == 0 else {
                return fail(.brokenProtocol("its limits cannot be set"), .starting)
            }
            running.cpuLimit = cpu
        }
        worker?.memoryLimit = running.memoryLimit
        worker?.cpuLimit = running.cpuLimit
        var result: Int32 = -1
        if case .variants = job.work {
            result = ic_memfd("imgcache-variants")
            if result < 0 {
                let error = SystemError("open", errno: Errno(-result))
                return fail(.cannotStart(error.exhaustsResources ? "no descriptor for its results: \(error.reason)" : "no memory for its results (\(error.reason))"),
                            .starting, replace: false)
            }
        }
        defer { if result >= 0 { SystemCall.close(result) } }
        running.page?.phase = .starting
        let message = job.message.encoded
        let descriptors = result >= 0 ? [body, result] : [body]
        let sent = message.withUnsafeBytes { bytes in
            descriptors.withUnsafeBufferPointer { ic_message_send(running.channel, bytes.baseAddress, bytes.count, $0.baseAddress, Int32($0.count)) }
        }
        guard sent > 0 else { return ended(running, phase: .starting, killedForTime: false) }
        let deadline = WallClock.monotonic() + seconds
        // Read once the job has ended: the worker is stopped or dead by then.
        var phase: WorkerFailure.Phase { running.page?.phase ?? .starting }
        while true {
            switch wait(running, until: deadline) {
            case .timedOut:
                kill(running.pid, SIGKILL)
                return ended(running, phase: phase, killedForTime: true)
            case .closed:
                return ended(running, phase: phase, killedForTime: false)
            case .message(let answer):
                switch answer.kind {
                case "done":
                    drainOutput(running)
                    return finished(answer, running: running, result: result, phase: phase)
                default:
                    // A crash report: the worker is dying; its end says the rest.
                    crash = answer
                }
            }
        }
    }

    /// The crash the worker reported before dying of it, if any.
    private var crash: WorkerMessage?
    /// The running job's memory limit, and what set it.
    private var limit = (bytes: 0, budget: WorkerFailure.MemoryBudget.setting)

    /// The outputs of a job the worker finished, read back from the result file.
    private func finished(_ answer: WorkerMessage, running: Running, result: Int32,
                          phase: WorkerFailure.Phase) -> Result<DecodeResult, DecodeFailure> {
        if let peak = answer.number("peak-rss") { WorkerRegistry.shared.notePeak(peak) }
        if var updated = worker {
            updated.cpuMilliseconds = answer.number("cpu-ms") ?? updated.cpuMilliseconds
            updated.jobs += 1
            worker = updated
            // (Its growth is read before the next job, from the kernel.)
            if updated.jobs >= DecodeWorkerProcess.jobsPerWorker { close() }
        }
        if let failure = answer.failure {
            // A library that ran out of memory inside the limit says so in its own words.
            if WorkerFailureClassifier.mentionsMemory(failure.description) || WorkerFailureClassifier.mentionsMemory(printed) {
                return .failure(.contained(WorkerFailure(cause: .memoryLimit(limit.bytes, limit.budget), phase: phase)))
            }
            return .failure(failure)
        }
        guard answer["failure"] == nil else {
            return .failure(.contained(WorkerFailure(cause: .brokenProtocol("it could not \(answer["failure"]!) its files"), phase: phase)))
        }
        var outputs: [ImageTransform.Output] = []
        var offset = 0
        for line in answer.values("output") {
            let parts = line.split(separator: " ")
            guard parts.count == 5 || parts.count == 7, let format = ImageFormat(rawValue: String(parts[0])), let width = Int(parts[1]), let height = Int(parts[2]),
                  let frames = Int(parts[3]), let length = Int(parts[4]), length >= 0, result >= 0 else {
                return .failure(.contained(WorkerFailure(cause: .brokenProtocol("its answer does not read"), phase: phase)))
            }
            guard let bytes = try? FileSystem.read(result, count: length, at: offset, path: "the decode worker's results"),
                  bytes.count == length else {
                return .failure(.contained(WorkerFailure(cause: .brokenProtocol("its results are shorter than it said"), phase: phase)))
            }
            offset += length
            var placeholder: ImagePlaceholder?
            if parts.count == 7 {
                guard let color = try? RGBColor(parsing: String(parts[5])), let hash = Base64.decoded(String(parts[6])) else {
                    return .failure(.contained(WorkerFailure(cause: .brokenProtocol("its answer does not read"), phase: phase)))
                }
                placeholder = ImagePlaceholder(dominantColor: color, thumbHash: hash)
            }
            outputs.append(ImageTransform.Output(bytes: bytes, width: width, height: height, format: format, frameCount: frames,
                                                 placeholder: placeholder))
        }
        return .success(DecodeResult(outputs: outputs, header: answer.header))
    }

    /// The failure of a worker that ended (or was ended) in the middle of a job.
    private func ended(_ running: Running, phase: WorkerFailure.Phase, killedForTime: Bool) -> Result<DecodeResult, DecodeFailure> {
        kill(running.pid, SIGKILL)
        drainOutput(running)
        let status = DecodeWorkerProcess.reap(running.pid)
        let report = crash
        crash = nil
        forget()
        if WorkerRegistry.shared.isStopping { return .failure(.interrupted) }
        if killedForTime { return .failure(.contained(WorkerFailure(cause: .timeLimit(limits.seconds), phase: phase))) }
        let signal = WorkerFailureClassifier.signal(of: status)
        let cause = WorkerFailureClassifier.cause(signal: signal, exitStatus: WorkerFailureClassifier.exitStatus(of: status),
                                                  reportedErrno: report?.fields.first.flatMap { Int32($0.value.split(separator: " ").last ?? "") },
                                                  printed: printed, limit: limit, seconds: limits.seconds)
        return .failure(.contained(WorkerFailure(cause: cause, phase: phase)))
    }

    private func fail(_ cause: WorkerFailure.Cause, _ phase: WorkerFailure.Phase, replace: Bool = true) -> Result<DecodeResult, DecodeFailure> {
        if replace { close() }
        return .failure(.contained(WorkerFailure(cause: cause, phase: phase)))
    }

    // MARK: - Starting, waiting, ending

    /// The running worker, started when there is none.
    private func start() -> Result<Running, DecodeFailure> {
        if let worker { return .success(worker) }
        var pair: [Int32] = [-1, -1], pipe: [Int32] = [-1, -1]
        var status = ic_socket_pair(&pair)
        if status != 0 { return .failure(.contained(WorkerFailure(cause: .cannotStart(SystemError("open", errno: Errno(status)).reason), phase: .starting))) }
        status = ic_pipe(&pipe)
        if status != 0 {
            SystemCall.close(pair[0])
            SystemCall.close(pair[1])
            return .failure(.contained(WorkerFailure(cause: .cannotStart(SystemError("open", errno: Errno(status)).reason), phase: .starting)))
        }
        let arguments = ["imgcache", DecodeWorkerMain.modeArgument, String(getpid())]
        var pid: Int32 = 0
        status = DecodeWorkerProcess.withCStrings(arguments) { argv in
            ic_worker_spawn("/proc/self/exe", argv, environ, pair[1], pipe[1], &pid)
        }
        SystemCall.close(pair[1])
        SystemCall.close(pipe[1])
        guard status == 0 else {
            SystemCall.close(pair[0])
            SystemCall.close(pipe[0])
            // A limit is named with its value (ulimit -u, ulimit -n), as a thread's is.
            return .failure(.contained(WorkerFailure(cause: .cannotStart(SystemError("start a process", errno: Errno(status)).reason), phase: .starting)))
        }
        _ = fcntl(pipe[0], F_SETFL, fcntl(pipe[0], F_GETFL) | O_NONBLOCK)
        var running = Running(pid: pid, channel: pair[0], output: pipe[0], page: nil, addressSpace: 0, startingAddressSpace: 0)
        worker = running
        guard WorkerRegistry.shared.register(pid) else {
            _ = ended(running, phase: .starting, killedForTime: false)
            return .failure(.interrupted)
        }
        switch wait(running, until: WallClock.monotonic() + DecodeWorkerProcess.startTimeout, keeping: true) {
        case .message(let ready) where ready.kind == "ready" && receivedDescriptor >= 0:
            let space = ready.number("address-space") ?? 0
            running = Running(pid: pid, channel: pair[0], output: pipe[0], page: WorkerPhasePage.map(receivedDescriptor),
                              addressSpace: space, startingAddressSpace: space)
            receivedDescriptor = -1
            worker = running
            return .success(running)
        case .timedOut, .closed, .message:
            let failure = ended(running, phase: .starting, killedForTime: false)
            if case .failure(.interrupted) = failure { return .failure(.interrupted) }
            let said = printed.last.map { ": \($0)" } ?? ""
            return .failure(.contained(WorkerFailure(cause: .cannotStart("it did not start\(said)"), phase: .starting)))
        }
    }

    private enum Wait {
        case message(WorkerMessage)
        case closed
        case timedOut
    }

    /// Where messages are read (one buffer for the worker's life, not one per message), made on
    /// the first wait: a run that decodes nothing (a hit) never zeroes its 64 KiB.
    private lazy var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    /// The descriptor the last message carried, when `wait` was asked to keep it; else -1.
    private var receivedDescriptor: Int32 = -1

    /// The worker's next message, gathering what it prints meanwhile; `.closed` when it ended.
    /// A descriptor the message carries is closed, or kept in `receivedDescriptor` when asked.
    private func wait(_ running: Running, until deadline: Double, keeping: Bool = false) -> Wait {
        if receivedDescriptor >= 0 { SystemCall.close(receivedDescriptor) }
        receivedDescriptor = -1
        while true {
            let left = deadline - WallClock.monotonic()
            if left <= 0 { return .timedOut }
            var watched = [pollfd(fd: running.channel, events: Int16(POLLIN), revents: 0),
                           pollfd(fd: running.output, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&watched, 2, Int32(min(left * 1000 + 1, 60_000)))
            if ready < 0 {
                if errno == EINTR { continue }
                return .closed
            }
            if watched[1].revents != 0 { drainOutput(running) }
            guard watched[0].revents != 0 else { continue }
            var descriptors: [Int32] = [-1]
            var count: Int32 = 0
            let received = buffer.withUnsafeMutableBytes { ic_message_receive(running.channel, $0.baseAddress, $0.count, &descriptors, 1, &count) }
            if count > 0 {
                if keeping { receivedDescriptor = descriptors[0] } else { SystemCall.close(descriptors[0]) }
            }
            guard received > 0, let message = WorkerMessage(decoding: buffer[..<Int(received)]) else { return .closed }
            return .message(message)
        }
    }

    /// Reads what the worker printed so far (kept up to 200 lines of a job).
    private func drainOutput(_ running: Running) {
        while true {
            let count = buffer.withUnsafeMutableBytes { read(running.output, $0.baseAddress, $0.count) }
            guard count > 0 else { return }
            for line in buffer[..<count].split(separator: 0x0A) where printed.count < 200 {
                let text = ControlCharacters.escaped(String(decoding: line, as: UTF8.self))
                if !text.isEmpty { printed.append(text) }
            }
        }
    }

    /// Ends the worker: its channel closed (it exits), then killed and reaped.
    package func close() {
        guard let running = worker else { return }
        kill(running.pid, SIGKILL)
        _ = DecodeWorkerProcess.reap(running.pid)
        forget()
    }

    /// Waits for the ended worker `pid`; its wait status. Its peak memory is noted.
    private static func reap(_ pid: Int32) -> Int32 {
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        WorkerRegistry.shared.notePeak(usage.ru_maxrss * 1024)
        return status
    }

    /// Drops the ended worker's descriptors and registration.
    private func forget() {
        guard let running = worker else { return }
        SystemCall.close(running.channel)
        SystemCall.close(running.output)
        WorkerRegistry.shared.unregister(running.pid)
        worker = nil
    }

    /// `words` as a NULL-terminated `char *[]` for the length of `body`.
    private static func withCStrings<T>(_ words: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> T) -> T {
        var pointers: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) }
        pointers.append(nil)
        defer { for pointer in pointers { free(pointer) } }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}

@available(*, unavailable)
extension DecodeWorkerProcess: Sendable {}
