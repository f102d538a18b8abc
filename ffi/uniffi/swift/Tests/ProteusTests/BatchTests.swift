import Foundation
import XCTest
@testable import Proteus

final class BatchTests: XCTestCase {
    func test1000QueuedMessagesWithProgressDeliveredBeforeTheCommit() async throws {
        let (alice, bob) = try await pair()
        let queue = try await queueFrom(alice, 1000)
        let collector = Collector()
        let summary = try await bob.decryptBatch(queue: queue, delivery: collector, maxChunk: 100, progressIntervalMs: 0)
        await assertEqual(summary.counts, [1000, 1000, 0, 0, 0])
        await assertTrue(summary.decryptMs > 0 && summary.deliveryMs >= 0 && summary.commitMs >= 0)
        await assertEqual(collector.progress.map { $0.done }, (1...10).map { Int32($0 * 100) })
        await assertTrue(collector.progress.allSatisfy { $0.total == 1000 })
        let results = collector.results
        await assertEqual(results.count, 1000)
        for (i, r) in results.enumerated() {
            await assertEqual(text(r.plaintext), "message \(i)")
            await assertEqual(r.messageId, messageId(envelope: queue[i].envelope))
            await assertNil(r.errorCode)
        }
        // Delivered again after the commit: all already seen.
        let again = Collector()
        await assertEqual(try await bob.decryptBatch(queue: queue, delivery: again, maxChunk: 1000, progressIntervalMs: 0).counts,
                       [1000, 0, 1000, 0, 0])
        await assertTrue(again.results.allSatisfy { $0.alreadySeen && $0.plaintext == nil && $0.errorCode == 209 })
    }

    func testAMixedQueueGivesOneResultPerMessage() async throws {
        let (alice, bob) = try await establishedPair()
        let carol = try await Client.inMemory()
        try await carol.createSession(sessionId: "bob", bundle: try await bob.generatePrekeys(count: 1)[0].bytes)
        let good = try await alice.encrypt(sessionId: "bob", plaintext: bytes("from alice"))
        var tampered = try await alice.encrypt(sessionId: "bob", plaintext: bytes("tampered"))
        tampered[tampered.count - 1] &+= 1
        let collector = Collector()
        let summary = try await bob.decryptBatch(queue: [
            QueuedMessage(sessionId: "alice", envelope: good),
            QueuedMessage(sessionId: "alice", envelope: Data([1, 2, 3])),
            QueuedMessage(sessionId: "carol", envelope: try await carol.encrypt(sessionId: "bob", plaintext: bytes("from carol"))),
            QueuedMessage(sessionId: "alice", envelope: tampered),
            QueuedMessage(sessionId: "alice", envelope: good),
        ], delivery: collector)
        await assertEqual(summary.counts, [5, 2, 1, 0, 2])
        // The failures by code: the undecodable envelope's (3xx) and 206.
        await assertEqual(summary.failedByCode.count, 2)
        await assertEqual(summary.failedByCode[206], 1)
        let r = collector.results
        await assertEqual(text(r[0].plaintext), "from alice")
        await assertEqual((r[1].errorCode ?? 0) / 100, 3)
        await assertEqual(text(r[2].plaintext), "from carol")
        // Carol's first message names her; Alice's (a session already answered) names no one.
        await assertEqual(r[2].sender, try await carol.fingerprint())
        await assertNil(r[0].sender)
        await assertEqual(r[3].errorCode, 206)
        await assertEqual(r[3].errorKind, .invalidSignature)
        await assertEqual(r[4].errorCode, 209)
        await assertTrue(r[4].alreadySeen)
    }

    func testReturningFalseStopsTheBatchAndCommitsNothing() async throws {
        let (alice, bob) = try await pair()
        let queue = try await queueFrom(alice, 300)
        let collector = Collector { _, progress in progress.done < 200 }
        await expectError(108, .batchAborted) { _ = try await bob.decryptBatch(queue: queue, delivery: collector, maxChunk: 100, progressIntervalMs: 0) }
        await assertEqual(collector.progress.map { $0.done }, [100, 200])
        await assertFalse(try await bob.hasSession(sessionId: "alice"))
        await assertEqual(try await bob.prekeysRemaining(), 1)
        await assertEqual(try await bob.decryptBatch(queue: queue, delivery: Collector()).decrypted, 300)
    }

    func testAThrowingCallbackStopsTheBatch() async throws {
        struct AppError: Error {}
        let (alice, bob) = try await pair()
        let queue = try await queueFrom(alice, 10)
        await expectError(121, .callbackFailed) { _ = try await bob.decryptBatch(queue: queue, delivery: Collector { _, _ in throw AppError() }) }
        await assertEqual(try await bob.decryptBatch(queue: queue, delivery: Collector()).decrypted, 10)
    }

    func testCallingTheClientFromItsOwnCallbackFailsWithClientBusy() async throws {
        // From a callback, Swift reaches the client through a Task on another thread: that call
        // waits for the batch (here 200 ms), then fails with ClientBusy rather than deadlocking.
        let (alice, bob) = try await pair(wait: 200)
        var inner: ProteusError?
        let collector = Collector { _, _ in
            do { _ = try blocking { try await bob.encrypt(sessionId: "alice", plaintext: bytes("re-entrant")) } } catch let e as ProteusError { inner = e }
            return true
        }
        await assertEqual(try await bob.decryptBatch(queue: try await queueFrom(alice, 5), delivery: collector).decrypted, 5)
        await assertEqual(inner?.code, 120)
        await assertEqual(inner?.kind, .clientBusy)
        // Thrown out of the callback, it is what decryptBatch throws.
        let queue = try await queueFrom(alice, 5, "second")
        await expectError(120, .clientBusy) { _ = try await bob.decryptBatch(queue: queue, delivery: Collector { _, _ in _ = try blocking { try await bob.fingerprint() }; return true }) }
        await assertEqual(try await bob.decryptBatch(queue: queue, delivery: Collector()).decrypted, 5)
    }

    func testByDefaultProgressComesAtASteadyRateAndAtTheEnd() async throws {
        let (alice, bob) = try await pair()
        let collector = Collector()
        _ = try await bob.decryptBatch(queue: try await queueFrom(alice, 2500), delivery: collector)
        let done = collector.progress.map { $0.done }
        await assertGreaterThanOrEqual(done.count, 3)
        await assertEqual(done, done.sorted())
        await assertEqual(done.last, 2500)
        await assertEqual(collector.results.count, 2500)
    }
}

final class PersistenceTests: XCTestCase {
    func testIdentityPrekeysAndSessionsSurviveCloseAndReopen() async throws {
        let path = tempStore()
        let peer = try await Client.inMemory()
        var fingerprint = ""
        do {
            let bob = try await Client.open(path: path)
            fingerprint = try await bob.fingerprint()
            let bundles = try await bob.generatePrekeys(count: 3)
            try await peer.createSession(sessionId: "bob", bundle: bundles[0].bytes)
            await assertEqual(text(try await bob.decrypt(sessionId: "peer", envelope: try await peer.encrypt(sessionId: "bob", plaintext: bytes("one")))), "one")
            await assertEqual(text(try await peer.decrypt(sessionId: "bob", envelope: try await bob.encrypt(sessionId: "peer", plaintext: bytes("two")))), "two")
        } // the last reference goes: the store is closed
        let bob = try await Client.open(path: path, mode: .existing)
        await assertEqual(try await bob.fingerprint(), fingerprint)
        await assertEqual(try await bob.prekeysRemaining(), 2)
        await assertEqual(try await bob.sessionIds(), ["peer"])
        await assertEqual(text(try await bob.decrypt(sessionId: "peer", envelope: try await peer.encrypt(sessionId: "bob", plaintext: bytes("three")))), "three")
        await assertEqual(text(try await peer.decrypt(sessionId: "bob", envelope: try await bob.encrypt(sessionId: "peer", plaintext: bytes("four")))), "four")
    }

    func testACommittedBatchStaysCommittedAndAnAbortedOneLeavesNothing() async throws {
        let path = tempStore()
        let alice = try await Client.inMemory()
        do {
            let bob = try await Client.open(path: path)
            try await alice.createSession(sessionId: "bob", bundle: try await bob.generatePrekeys(count: 1)[0].bytes)
        }
        let first = try await queueFrom(alice, 50, "first")
        let second = try await queueFrom(alice, 50, "second")
        do {
            let bob = try await Client.open(path: path)
            await assertEqual(try await bob.decryptBatch(queue: first, delivery: Collector()).decrypted, 50)
            await expectError(108, .batchAborted) { _ = try await bob.decryptBatch(queue: second, delivery: Collector { _, _ in false }) }
        }
        let bob = try await Client.open(path: path)
        await assertEqual(try await bob.decryptBatch(queue: first, delivery: Collector()).alreadySeen, 50)
        await assertEqual(try await bob.decryptBatch(queue: second, delivery: Collector()).decrypted, 50)
    }
}
