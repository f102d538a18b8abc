import Foundation
import XCTest
@testable import Proteus

/// Every error kind an application can meet through this API, each with its stable code.
final class ErrorTests: XCTestCase {
    func testClientMisuse104To110() async throws {
        let (alice, bob) = try await establishedPair()
        await expectError(104, .sessionNotFound) { _ = try await alice.encrypt(sessionId: "carol", plaintext: bytes("x")) }
        await expectError(105, .sessionExists) { try await alice.createSession(sessionId: "bob", bundle: try await bob.lastResortBundle().bytes) }
        await expectError(106, .invalidSessionId) { _ = try await alice.encrypt(sessionId: "", plaintext: bytes("x")) }
        await expectError(107, .identityInUse) { try await alice.importIdentity(identity: try await Client.inMemory().exportIdentity()) }
        await expectError(108, .batchAborted) { _ = try await bob.decryptBatch(queue: try await queueFrom(alice, 1), delivery: Collector { _, _ in false }) }
        await expectError(101, .preKeyNotFound) { _ = try await bob.prekeyBundle(id: 4242) }
        await expectError(110, .preKeyIdsExhausted) { _ = try await bob.generatePrekeys(count: 70_000) }
    }

    func testBindingErrors120And121() async throws {
        struct AppError: Error {}
        // A call from the callback (through a Task) waits for the batch, 200 ms here, then fails.
        let (alice, bob) = try await pair(wait: 200)
        await expectError(120, .clientBusy) { _ = try await bob.decryptBatch(queue: try await queueFrom(alice, 1), delivery: Collector { _, _ in _ = try blocking { try await bob.prekeysRemaining() }; return true }) }
        await expectError(121, .callbackFailed) { _ = try await bob.decryptBatch(queue: try await queueFrom(alice, 1), delivery: Collector { _, _ in throw AppError() }) }
    }

    func testHandshakeErrors101And204() async throws {
        let bob = try await Client.inMemory()
        let bundle = try await bob.generatePrekeys(count: 1)[0]
        let alice = try await Client.inMemory()
        try await alice.createSession(sessionId: "bob", bundle: bundle.bytes)
        let mallory = try await Client.inMemory()
        try await mallory.createSession(sessionId: "bob", bundle: bundle.bytes)
        _ = try await bob.decrypt(sessionId: "alice", envelope: try await alice.encrypt(sessionId: "bob", plaintext: bytes("first")))
        await expectError(101, .preKeyNotFound) { _ = try await bob.decrypt(sessionId: "mallory", envelope: try await mallory.encrypt(sessionId: "bob", plaintext: bytes("late"))) }
        let carol = try await Client.inMemory()
        try await carol.createSession(sessionId: "bob", bundle: try await bob.lastResortBundle().bytes)
        await expectError(204, .remoteIdentityChanged) { _ = try await bob.decrypt(sessionId: "alice", envelope: try await carol.encrypt(sessionId: "bob", plaintext: bytes("me?"))) }
    }

    func testMessageErrors206And209AndTooDistantFuture() async throws {
        let (alice, bob) = try await establishedPair()
        let envelope = try await alice.encrypt(sessionId: "bob", plaintext: bytes("once"))
        var tampered = envelope
        tampered[tampered.count - 1] &+= 1
        await expectError(206, .invalidSignature) { _ = try await bob.decrypt(sessionId: "alice", envelope: tampered) }
        await assertEqual(text(try await bob.decrypt(sessionId: "alice", envelope: envelope)), "once")
        await expectError(209, .duplicateMessage) { _ = try await bob.decrypt(sessionId: "alice", envelope: envelope) }
        // A gap over 1000 is fast-forwarded (up to 100,000 skipped messages); more is refused.
        let skipped = try await encryptMany(alice, 1002) { "m\($0)" }
        await assertEqual(text(try await bob.decrypt(sessionId: "alice", envelope: skipped[1001])), "m1001")
        // 100,001 messages in one call: the fan-out takes a session id listed many times.
        _ = try await alice.encryptFor(sessionIds: Array(repeating: "bob", count: 100_001), plaintext: bytes("x"))
        let far = try await alice.encrypt(sessionId: "bob", plaintext: bytes("far"))
        await expectError(212, .tooDistantFuture) { _ = try await bob.decrypt(sessionId: "alice", envelope: far) }
    }

    func testMessageKeyEvicted214IsNotAlreadySeen() async throws {
        let (alice, bob) = try await establishedPair()
        let sent = try await encryptMany(alice, 1500) { "m\($0)" }
        await assertEqual(text(try await bob.decrypt(sessionId: "alice", envelope: sent[900])), "m900")
        // 1498 keys skipped in all; only the newest 1000 are kept, so message 0's is gone.
        await assertEqual(text(try await bob.decrypt(sessionId: "alice", envelope: sent[1499])), "m1499")
        await expectError(214, .messageKeyEvicted) { _ = try await bob.decrypt(sessionId: "alice", envelope: sent[0]) }
        let collector = Collector()
        let summary = try await bob.decryptBatch(queue: [QueuedMessage(sessionId: "alice", envelope: sent[1])], delivery: collector)
        await assertEqual(summary.counts, [1, 0, 0, 1, 0])
        await assertTrue(summary.failedByCode.isEmpty)
        let r = collector.results[0]
        await assertEqual(r.errorCode, 214)
        await assertFalse(r.alreadySeen)
    }

    func testDecodingErrors3xxAndLocalIdentity300() async throws {
        let client = try await Client.inMemory()
        for garbage in [Data(), Data([1]), Data([0xa1, 0x00]), Data(repeating: 0x5a, count: 64)] {
            do {
                _ = try await client.decrypt(sessionId: "peer", envelope: garbage)
                XCTFail("garbage decrypted")
            } catch let e as ProteusError {
                await assertEqual(e.code / 100, 3, "\(e.kind) \(e.code)")
            }
            await assertThrows { try await client.createSession(sessionId: "peer", bundle: garbage) }
            await assertThrows { _ = try bundleFingerprint(bundle: garbage) }
        }
        let (alice, _) = try await establishedPair()
        await expectError(300, .localIdentityChanged) { try await client.importSession(sessionId: "bob", session: try await alice.exportSession(sessionId: "bob")) }
    }

    func testInputErrors409And410() async throws {
        let bob = try await Client.inMemory()
        var bundle = try await bob.generatePrekeys(count: 1)[0].bytes
        let fp = try await bob.fingerprint()
        let identity = Data(stride(from: 0, to: 64, by: 2).map { i -> UInt8 in
            let s = fp.index(fp.startIndex, offsetBy: i)
            return UInt8(fp[s...fp.index(after: s)], radix: 16)!
        })
        let at = bundle.range(of: identity)!.lowerBound
        bundle.replaceSubrange(at..<(at + 32), with: Data(count: 32))
        await expectError(409, .invalidKey) { try await Client.inMemory().createSession(sessionId: "bob", bundle: bundle) }
        let (alice, _) = try await pair()
        await expectError(410, .plaintextTooLong) { _ = try await alice.encrypt(sessionId: "bob", plaintext: Data(count: 5 * 1024 * 1024)) }
    }

    func testStoreErrors502To507() async throws {
        let path = tempStore()
        await expectError(504, .storeNotFound) { _ = try await Client.open(path: path, mode: .existing) }
        do {
            let open = try await Client.open(path: path, mode: .new)
            // A second opener shares the store (an app and its extension)...
            let second = try await Client.open(path: path, mode: .existingOrNew)
            await assertEqual(try await second.fingerprint(), try await open.fingerprint())
            // ...but waits for a call of the other to end: from inside a batch's delivery, an
            // opener with a 50 ms busy timeout gets StoreBusy.
            let alice = try await Client.inMemory()
            try await alice.createSession(sessionId: "bob", bundle: try await open.generatePrekeys(count: 1)[0].bytes)
            let collector = Collector { _, _ in
                do {
                    _ = try blocking { try await Client.open(path: path, mode: .existingOrNew, options: ClientOptions(busyTimeoutMs: 50)) }
                    XCTFail("opened during the other client's call")
                } catch let e as ProteusError {
                    XCTAssertEqual(e.kind, .storeBusy)
                }
                return true
            }
            _ = try await open.decryptBatch(queue: try await queueFrom(alice, 1), delivery: collector, maxChunk: 1, progressIntervalMs: 0)
            await assertEqual(collector.results.count, 1)
            await assertEqual(try await open.fingerprint().count, 64)
        }
        await expectError(505, .storeAlreadyExists) { _ = try await Client.open(path: path, mode: .new) }
        // A newer schema version (SQLite's user_version, at offset 60 of the header).
        let newer = tempStore()
        _ = try await Client.open(path: newer)
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: newer))
        try handle.seek(toOffset: 60)
        handle.write(Data([0, 0, 0, 99]))
        try handle.close()
        await expectError(506, .unsupportedSchema) { _ = try await Client.open(path: newer) }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("proteus-swift-dir-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        await expectError(507, .storageFailure) { _ = try await Client.open(path: dir.path) }
    }
}

/// One client used from 8 threads at once: no corruption, no deadlock.
final class ConcurrencyTests: XCTestCase {
    func test8ThreadsEncryptOnOneSessionAndEveryMessageDecryptsOnce() async throws {
        let (alice, bob) = try await establishedPair()
        let collected = Collected<Data>()
        DispatchQueue.concurrentPerform(iterations: 8) { t in
            for i in 0..<100 {
                collected.add(try! blocking { try await alice.encrypt(sessionId: "bob", plaintext: bytes("\(t)/\(i)")) })
            }
        }
        let envelopes = collected.all
        let collector = Collector()
        let summary = try await bob.decryptBatch(queue: envelopes.shuffled().map { QueuedMessage(sessionId: "alice", envelope: $0) }, delivery: collector)
        await assertEqual(summary.decrypted, 800)
        await assertEqual(Set(collector.results.compactMap { text($0.plaintext) }).count, 800)
    }

    func test8ThreadsShareASQLiteClientEachWithItsOwnPeer() async throws {
        let path = tempStore()
        var made: [Client] = []
        for _ in 0..<8 { made.append(try await Client.inMemory()) }
        let peers = made
        struct Mismatch: Error {}
        do {
            let alice = try await Client.open(path: path)
            for (t, peer) in peers.enumerated() {
                try await alice.createSession(sessionId: "peer:\(t)", bundle: try await peer.generatePrekeys(count: 1)[0].bytes)
            }
            let fingerprint = try await alice.fingerprint()
            let failed = Collected<String>()
            DispatchQueue.concurrentPerform(iterations: 8) { t in
                do {
                    try blocking {
                    for i in 0..<50 {
                        let envelope = try await alice.encrypt(sessionId: "peer:\(t)", plaintext: bytes("to \(t) #\(i)"))
                        guard text(try await peers[t].decrypt(sessionId: "alice", envelope: envelope)) == "to \(t) #\(i)" else { throw Mismatch() }
                        let reply = try await peers[t].encrypt(sessionId: "alice", plaintext: bytes("from \(t) #\(i)"))
                        guard text(try await alice.decrypt(sessionId: "peer:\(t)", envelope: reply)) == "from \(t) #\(i)" else { throw Mismatch() }
                        guard try await alice.fingerprint() == fingerprint, try await alice.sessionIds().count == 8 else { throw Mismatch() }
                    }
                    }
                } catch {
                    failed.add("\(t): \(error)")
                }
            }
            await assertEqual(failed.all, [])
        }
        let alice = try await Client.open(path: path)
        for (t, peer) in peers.enumerated() {
            await assertEqual(text(try await peer.decrypt(sessionId: "alice", envelope: try await alice.encrypt(sessionId: "peer:\(t)", plaintext: bytes("after \(t)")))), "after \(t)")
        }
    }

    func testSwiftTasksShareAClient() async throws {
        let (alice, bob) = try await establishedPair()
        let envelopes = try await withThrowingTaskGroup(of: [Data].self) { group in
            for t in 0..<8 {
                group.addTask { try await encryptMany(alice, 50) { "task \(t)/\($0)" } }
            }
            var all: [Data] = []
            for try await chunk in group { all += chunk }
            return all
        }
        let decrypted = try await withThrowingTaskGroup(of: Int32.self) { group in
            for start in stride(from: 0, to: envelopes.count, by: 100) {
                let chunk = envelopes[start..<min(start + 100, envelopes.count)].map { QueuedMessage(sessionId: "alice", envelope: $0) }
                group.addTask { try await bob.decryptBatch(queue: chunk, delivery: Collector()).decrypted }
            }
            var sum: Int32 = 0
            for try await n in group { sum += n }
            return sum
        }
        await assertEqual(decrypted, 400)
    }

    func testACallbackWaitingForAnotherThreadGetsClientBusyNotADeadlock() async throws {
        let alice = try await Client.inMemory()
        let bob = try await Client.inMemory(options: ClientOptions(waitTimeoutMs: 200))
        try await alice.createSession(sessionId: "bob", bundle: try await bob.generatePrekeys(count: 1)[0].bytes)
        var seen: Error?
        _ = try await bob.decryptBatch(queue: try await queueFrom(alice, 1), delivery: Collector { _, _ in
            // Another thread's call waits for this batch, which waits for it: it gives up.
            do { _ = try blocking { try await bob.sessionIds() } } catch { seen = error }
            return true
        })
        await assertEqual((seen as? ProteusError)?.kind, .clientBusy)
        // It gave up after the client's wait timeout (the default is 30 s), however long that took.
        XCTAssertTrue((seen as? ProteusError)?.detail.contains("within 200 ms") ?? false, "\(String(describing: seen))")
        await assertEqual(try await bob.sessionIds(), ["alice"])
    }
}

/// Values collected from several threads.
final class Collected<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [T] = []
    func add(_ item: T) { lock.lock(); items.append(item); lock.unlock() }
    var all: [T] { lock.lock(); defer { lock.unlock() }; return items }
}
