import Foundation
import XCTest
@testable import Proteus

/// Every error kind an application can meet through this API, each with its stable code.
final class ErrorTests: XCTestCase {
    func testClientMisuse104To110() throws {
        let (alice, bob) = try establishedPair()
        expectError(104, "SessionNotFound") { _ = try alice.encrypt(sessionId: "carol", plaintext: bytes("x")) }
        expectError(105, "SessionExists") { try alice.createSession(sessionId: "bob", bundle: try bob.lastResortBundle().bytes) }
        expectError(106, "InvalidSessionId") { _ = try alice.encrypt(sessionId: "", plaintext: bytes("x")) }
        expectError(107, "IdentityInUse") { try alice.importIdentity(identity: try Client.inMemory().exportIdentity()) }
        expectError(108, "BatchAborted") { _ = try bob.decryptBatch(queue: try queueFrom(alice, 1), delivery: Collector { _, _ in false }) }
        expectError(101, "PreKeyNotFound") { _ = try bob.prekeyBundle(id: 4242) }
        expectError(110, "PreKeyIdsExhausted") { _ = try bob.generatePrekeys(count: 70_000) }
    }

    func testBindingErrors120And121() throws {
        struct AppError: Error {}
        let (alice, bob) = try pair()
        expectError(120, "ClientBusy") { _ = try bob.decryptBatch(queue: try queueFrom(alice, 1), delivery: Collector { _, _ in _ = try bob.prekeysRemaining(); return true }) }
        expectError(121, "CallbackFailed") { _ = try bob.decryptBatch(queue: try queueFrom(alice, 1), delivery: Collector { _, _ in throw AppError() }) }
    }

    func testHandshakeErrors101And204() throws {
        let bob = try Client.inMemory()
        let bundle = try bob.generatePrekeys(count: 1)[0]
        let alice = try Client.inMemory()
        try alice.createSession(sessionId: "bob", bundle: bundle.bytes)
        let mallory = try Client.inMemory()
        try mallory.createSession(sessionId: "bob", bundle: bundle.bytes)
        _ = try bob.decrypt(sessionId: "alice", envelope: try alice.encrypt(sessionId: "bob", plaintext: bytes("first")))
        expectError(101, "PreKeyNotFound") { _ = try bob.decrypt(sessionId: "mallory", envelope: try mallory.encrypt(sessionId: "bob", plaintext: bytes("late"))) }
        let carol = try Client.inMemory()
        try carol.createSession(sessionId: "bob", bundle: try bob.lastResortBundle().bytes)
        expectError(204, "RemoteIdentityChanged") { _ = try bob.decrypt(sessionId: "alice", envelope: try carol.encrypt(sessionId: "bob", plaintext: bytes("me?"))) }
    }

    func testMessageErrors206And209AndTooDistantFuture() throws {
        let (alice, bob) = try establishedPair()
        let envelope = try alice.encrypt(sessionId: "bob", plaintext: bytes("once"))
        var tampered = envelope
        tampered[tampered.count - 1] &+= 1
        expectError(206, "InvalidSignature") { _ = try bob.decrypt(sessionId: "alice", envelope: tampered) }
        XCTAssertEqual(text(try bob.decrypt(sessionId: "alice", envelope: envelope)), "once")
        expectError(209, "DuplicateMessage") { _ = try bob.decrypt(sessionId: "alice", envelope: envelope) }
        // A gap over 1000 is fast-forwarded (up to 100,000 skipped messages); more is refused.
        let skipped = try (0..<1002).map { try alice.encrypt(sessionId: "bob", plaintext: bytes("m\($0)")) }
        XCTAssertEqual(text(try bob.decrypt(sessionId: "alice", envelope: skipped[1001])), "m1001")
        for _ in 0..<100_001 { _ = try alice.encrypt(sessionId: "bob", plaintext: bytes("x")) }
        let far = try alice.encrypt(sessionId: "bob", plaintext: bytes("far"))
        expectError(212, "TooDistantFuture") { _ = try bob.decrypt(sessionId: "alice", envelope: far) }
    }

    func testMessageKeyEvicted214IsNotAlreadySeen() throws {
        let (alice, bob) = try establishedPair()
        let sent = try (0..<1500).map { try alice.encrypt(sessionId: "bob", plaintext: bytes("m\($0)")) }
        XCTAssertEqual(text(try bob.decrypt(sessionId: "alice", envelope: sent[900])), "m900")
        // 1498 keys skipped in all; only the newest 1000 are kept, so message 0's is gone.
        XCTAssertEqual(text(try bob.decrypt(sessionId: "alice", envelope: sent[1499])), "m1499")
        expectError(214, "MessageKeyEvicted") { _ = try bob.decrypt(sessionId: "alice", envelope: sent[0]) }
        let collector = Collector()
        let summary = try bob.decryptBatch(queue: [QueuedMessage(sessionId: "alice", envelope: sent[1])], delivery: collector)
        XCTAssertEqual(summary, BatchSummary(total: 1, decrypted: 0, alreadySeen: 0, failed: 1))
        let r = collector.results[0]
        XCTAssertEqual(r.errorCode, 214)
        XCTAssertFalse(r.alreadySeen)
    }

    func testDecodingErrors3xxAndLocalIdentity300() throws {
        let client = try Client.inMemory()
        for garbage in [Data(), Data([1]), Data([0xa1, 0x00]), Data(repeating: 0x5a, count: 64)] {
            do {
                _ = try client.decrypt(sessionId: "peer", envelope: garbage)
                XCTFail("garbage decrypted")
            } catch let e as ProteusError {
                XCTAssertEqual(e.code / 100, 3, "\(e.kind) \(e.code)")
            }
            XCTAssertThrowsError(try client.createSession(sessionId: "peer", bundle: garbage))
            XCTAssertThrowsError(try bundleFingerprint(bundle: garbage))
        }
        let (alice, _) = try establishedPair()
        expectError(300, "LocalIdentityChanged") { try client.importSession(sessionId: "bob", session: try alice.exportSession(sessionId: "bob")) }
    }

    func testInputErrors409And410() throws {
        let bob = try Client.inMemory()
        var bundle = try bob.generatePrekeys(count: 1)[0].bytes
        let fp = try bob.fingerprint()
        let identity = Data(stride(from: 0, to: 64, by: 2).map { i -> UInt8 in
            let s = fp.index(fp.startIndex, offsetBy: i)
            return UInt8(fp[s...fp.index(after: s)], radix: 16)!
        })
        let at = bundle.range(of: identity)!.lowerBound
        bundle.replaceSubrange(at..<(at + 32), with: Data(count: 32))
        expectError(409, "InvalidKey") { try Client.inMemory().createSession(sessionId: "bob", bundle: bundle) }
        let (alice, _) = try pair()
        expectError(410, "PlaintextTooLong") { _ = try alice.encrypt(sessionId: "bob", plaintext: Data(count: 5 * 1024 * 1024)) }
    }

    func testStoreErrors502To507() throws {
        let path = tempStore()
        expectError(504, "StoreNotFound") { _ = try Client.openWith(path: path, mode: .existing, options: ClientOptions()) }
        do {
            let open = try Client.openWith(path: path, mode: .new, options: ClientOptions())
            // A second opener shares the store (an app and its extension)...
            let second = try Client.openWith(path: path, mode: .existingOrNew, options: ClientOptions())
            XCTAssertEqual(try second.fingerprint(), try open.fingerprint())
            // ...but waits for a call of the other to end: from inside a batch's delivery, an
            // opener with a 50 ms busy timeout gets StoreBusy.
            let alice = try Client.inMemory()
            try alice.createSession(sessionId: "bob", bundle: try open.generatePrekeys(count: 1)[0].bytes)
            let collector = Collector { _, _ in
                expectError(502, "StoreBusy") { _ = try Client.openWith(path: path, mode: .existingOrNew, options: ClientOptions(busyTimeoutMs: 50)) }
                return true
            }
            _ = try open.decryptBatch(queue: try queueFrom(alice, 1), delivery: collector, maxChunk: 1, progressIntervalMs: 0)
            XCTAssertEqual(collector.results.count, 1)
            XCTAssertEqual(try open.fingerprint().count, 64)
        }
        expectError(505, "StoreAlreadyExists") { _ = try Client.openWith(path: path, mode: .new, options: ClientOptions()) }
        // A newer schema version (SQLite's user_version, at offset 60 of the header).
        let newer = tempStore()
        _ = try Client.open(path: newer)
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: newer))
        try handle.seek(toOffset: 60)
        handle.write(Data([0, 0, 0, 99]))
        try handle.close()
        expectError(506, "UnsupportedSchema") { _ = try Client.open(path: newer) }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("proteus-swift-dir-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        expectError(507, "StorageFailure") { _ = try Client.open(path: dir.path) }
    }
}

/// One client used from 8 threads at once: no corruption, no deadlock.
final class ConcurrencyTests: XCTestCase {
    func test8ThreadsEncryptOnOneSessionAndEveryMessageDecryptsOnce() throws {
        let (alice, bob) = try establishedPair()
        let lock = NSLock()
        var envelopes: [Data] = []
        DispatchQueue.concurrentPerform(iterations: 8) { t in
            for i in 0..<100 {
                let e = try! alice.encrypt(sessionId: "bob", plaintext: bytes("\(t)/\(i)"))
                lock.lock(); envelopes.append(e); lock.unlock()
            }
        }
        let collector = Collector()
        let summary = try bob.decryptBatch(queue: envelopes.shuffled().map { QueuedMessage(sessionId: "alice", envelope: $0) }, delivery: collector)
        XCTAssertEqual(summary.decrypted, 800)
        XCTAssertEqual(Set(collector.results.compactMap { text($0.plaintext) }).count, 800)
    }

    func test8ThreadsShareASQLiteClientEachWithItsOwnPeer() throws {
        let path = tempStore()
        let peers = try (0..<8).map { _ in try Client.inMemory() }
        do {
            let alice = try Client.open(path: path)
            for (t, peer) in peers.enumerated() {
                try alice.createSession(sessionId: "peer:\(t)", bundle: try peer.generatePrekeys(count: 1)[0].bytes)
            }
            let fingerprint = try alice.fingerprint()
            let failures = NSLock()
            var failed: [String] = []
            DispatchQueue.concurrentPerform(iterations: 8) { t in
                do {
                    for i in 0..<50 {
                        let envelope = try alice.encrypt(sessionId: "peer:\(t)", plaintext: bytes("to \(t) #\(i)"))
                        guard text(try peers[t].decrypt(sessionId: "alice", envelope: envelope)) == "to \(t) #\(i)" else { throw ProteusError.Failure(code: 0, kind: "mismatch", detail: "") }
                        let reply = try peers[t].encrypt(sessionId: "alice", plaintext: bytes("from \(t) #\(i)"))
                        guard text(try alice.decrypt(sessionId: "peer:\(t)", envelope: reply)) == "from \(t) #\(i)" else { throw ProteusError.Failure(code: 0, kind: "mismatch", detail: "") }
                        guard try alice.fingerprint() == fingerprint, try alice.sessionIds().count == 8 else { throw ProteusError.Failure(code: 0, kind: "mismatch", detail: "") }
                    }
                } catch {
                    failures.lock(); failed.append("\(t): \(error)"); failures.unlock()
                }
            }
            XCTAssertEqual(failed, [])
        }
        let alice = try Client.open(path: path)
        for (t, peer) in peers.enumerated() {
            XCTAssertEqual(text(try peer.decrypt(sessionId: "alice", envelope: try alice.encrypt(sessionId: "peer:\(t)", plaintext: bytes("after \(t)")))), "after \(t)")
        }
    }

    func testSwiftTasksShareAClient() async throws {
        let (alice, bob) = try establishedPair()
        let envelopes = try await withThrowingTaskGroup(of: [Data].self) { group in
            for t in 0..<8 {
                group.addTask { try (0..<50).map { try alice.encrypt(sessionId: "bob", plaintext: bytes("task \(t)/\($0)")) } }
            }
            var all: [Data] = []
            for try await chunk in group { all += chunk }
            return all
        }
        let decrypted = try await withThrowingTaskGroup(of: UInt32.self) { group in
            for start in stride(from: 0, to: envelopes.count, by: 100) {
                let chunk = envelopes[start..<min(start + 100, envelopes.count)].map { QueuedMessage(sessionId: "alice", envelope: $0) }
                group.addTask { try bob.decryptBatch(queue: chunk, delivery: Collector()).decrypted }
            }
            var sum: UInt32 = 0
            for try await n in group { sum += n }
            return sum
        }
        XCTAssertEqual(decrypted, 400)
    }

    func testACallbackWaitingForAnotherThreadGetsClientBusyNotADeadlock() throws {
        let alice = try Client.inMemory()
        let bob = try Client.inMemoryWith(options: ClientOptions(waitTimeoutMs: 200))
        try alice.createSession(sessionId: "bob", bundle: try bob.generatePrekeys(count: 1)[0].bytes)
        var seen: Error?
        let start = Date()
        _ = try bob.decryptBatch(queue: try queueFrom(alice, 1), delivery: Collector { _, _ in
            let done = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                do { _ = try bob.sessionIds() } catch { seen = error }
                done.signal()
            }
            XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
            return true
        })
        XCTAssertEqual((seen as? ProteusError)?.kind, "ClientBusy")
        XCTAssertLessThan(Date().timeIntervalSince(start), 10)
        XCTAssertEqual(try bob.sessionIds(), ["alice"])
    }
}
