import Foundation

/// Base of the suites that also need the fault server: per test, nginx, the
/// fault server, a HOME and an empty cache root, all removed after it.
class FaultServerSuite: LoopbackCacheSuite {
    let faults: FaultServer

    override init() throws {
        faults = try FaultServer(directory: Paths.fixtures.path)
        try super.init()
    }

    deinit { faults.stop() }
}
