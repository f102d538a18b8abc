import Foundation
import XCTest
@testable import Proteus

/// Collects the library's log lines.
final class Lines: ProteusLogger, @unchecked Sendable {
    private let lock = NSLock()
    private var _lines: [(LogLevel, String)] = []
    var lines: [(LogLevel, String)] { lock.lock(); defer { lock.unlock() }; return _lines }
    func log(level: LogLevel, message: String) {
        lock.lock(); defer { lock.unlock() }
        _lines.append((level, message))
    }
}

/// The library's log, through the app's logger: its lines, its levels, nothing secret in it.
final class LoggerTests: XCTestCase {
    override func tearDown() {
        setLogger(logger: Lines(), level: .off)
    }

    func testTheLogNamesEventsAndLevelsNeverIdsFingerprintsOrPlaintext() async throws {
        let logger = Lines()
        setLogger(logger: logger, level: .info)
        let alice = try await Client.inMemory()
        let bob = try await Client.inMemory()
        try await alice.createSession(sessionId: "bob-swift-id", bundle: try await bob.generatePrekeys(count: 1)[0].bytes)
        var queue: [QueuedMessage] = []
        for i in 0..<3 {
            queue.append(QueuedMessage(sessionId: "alice-swift-id", envelope: try await alice.encrypt(sessionId: "bob-swift-id", plaintext: bytes("secret plaintext \(i)"))))
        }
        let summary = try await bob.decryptBatch(queue: queue + [queue[0]], delivery: Collector())
        await assertEqual(summary.counts, [4, 3, 1, 0, 0])
        let lines = logger.lines
        XCTAssertTrue(lines.contains { $0.0 == .info && $0.1.hasPrefix("client opened: new identity") }, "\(lines)")
        XCTAssertTrue(lines.contains { $0.0 == .info && $0.1.hasPrefix("batch: 4 messages: 3 decrypted, 1 already seen") }, "\(lines)")
        XCTAssertTrue(lines.contains { $0.0 == .warn && $0.1.contains("one-time prekeys left") }, "\(lines)")
        let secrets = ["alice-swift-id", "bob-swift-id", "secret plaintext", try await alice.fingerprint(), try await bob.fingerprint()]
        for (_, line) in lines {
            XCTAssertFalse(secrets.contains { line.contains($0) }, "a log line names a secret or an id: \(line)")
        }
    }

    func testALevelFiltersAndOffIsSilent() async throws {
        let logger = Lines()
        setLogger(logger: logger, level: .warn)
        _ = try await Client.inMemory()
        XCTAssertFalse(logger.lines.contains { $0.0 == .info }, "\(logger.lines)")
        setLogger(logger: logger, level: .off)
        let before = logger.lines.count
        _ = try await Client.inMemory()
        XCTAssertEqual(logger.lines.count, before)
    }
}
