import Foundation
import XCTest
@testable import Proteus

final class BatchTests: XCTestCase {
    func test1000QueuedMessagesWithProgressDeliveredBeforeTheCommit() throws {
        let (alice, bob) = try pair()
        let queue = try queueFrom(alice, 1000)
        let collector = Collector()
        let summary = try bob.decryptBatch(queue: queue, delivery: collector, maxChunk: 100, progressIntervalMs: 0)
        XCTAssertEqual(summary, BatchSummary(total: 1000, decrypted: 1000, alreadySeen: 0, failed: 0))
        XCTAssertEqual(collector.progress.map { $0.done }, (1...10).map { UInt32($0 * 100) })
        XCTAssertTrue(collector.progress.allSatisfy { $0.total == 1000 })
        let results = collector.results
        XCTAssertEqual(results.count, 1000)
        for (i, r) in results.enumerated() {
            XCTAssertEqual(text(r.plaintext), "message \(i)")
            XCTAssertEqual(r.messageId, messageId(envelope: queue[i].envelope))
            XCTAssertNil(r.errorCode)
        }
        // Delivered again after the commit: all already seen.
        let again = Collector()
        XCTAssertEqual(try bob.decryptBatch(queue: queue, delivery: again, maxChunk: 1000, progressIntervalMs: 0),
                       BatchSummary(total: 1000, decrypted: 0, alreadySeen: 1000, failed: 0))
        XCTAssertTrue(again.results.allSatisfy { $0.alreadySeen && $0.plaintext == nil && $0.errorCode == 209 })
    }

    func testAMixedQueueGivesOneResultPerMessage() throws {
        let (alice, bob) = try establishedPair()
        let carol = try Client.inMemory()
        try carol.createSession(sessionId: "bob", bundle: try bob.generatePrekeys(count: 1)[0].bytes)
        let good = try alice.encrypt(sessionId: "bob", plaintext: bytes("from alice"))
        var tampered = try alice.encrypt(sessionId: "bob", plaintext: bytes("tampered"))
        tampered[tampered.count - 1] &+= 1
        let collector = Collector()
        let summary = try bob.decryptBatch(queue: [
            QueuedMessage(sessionId: "alice", envelope: good),
            QueuedMessage(sessionId: "alice", envelope: Data([1, 2, 3])),
            QueuedMessage(sessionId: "carol", envelope: try carol.encrypt(sessionId: "bob", plaintext: bytes("from carol"))),
            QueuedMessage(sessionId: "alice", envelope: tampered),
            QueuedMessage(sessionId: "alice", envelope: good),
        ], delivery: collector)
        XCTAssertEqual(summary, BatchSummary(total: 5, decrypted: 2, alreadySeen: 1, failed: 2))
        let r = collector.results
        XCTAssertEqual(text(r[0].plaintext), "from alice")
        XCTAssertEqual((r[1].errorCode ?? 0) / 100, 3)
        XCTAssertEqual(text(r[2].plaintext), "from carol")
        // Carol's first message names her; Alice's (a session already answered) names no one.
        XCTAssertEqual(r[2].sender, try carol.fingerprint())
        XCTAssertNil(r[0].sender)
        XCTAssertEqual(r[3].errorCode, 206)
        XCTAssertEqual(r[3].errorKind, "InvalidSignature")
        XCTAssertEqual(r[4].errorCode, 209)
        XCTAssertTrue(r[4].alreadySeen)
    }

    func testReturningFalseStopsTheBatchAndCommitsNothing() throws {
        let (alice, bob) = try pair()
        let queue = try queueFrom(alice, 300)
        let collector = Collector { _, progress in progress.done < 200 }
        expectError(108, "BatchAborted") { _ = try bob.decryptBatch(queue: queue, delivery: collector, maxChunk: 100, progressIntervalMs: 0) }
        XCTAssertEqual(collector.progress.map { $0.done }, [100, 200])
        XCTAssertFalse(try bob.hasSession(sessionId: "alice"))
        XCTAssertEqual(try bob.prekeysRemaining(), 1)
        XCTAssertEqual(try bob.decryptBatch(queue: queue, delivery: Collector()).decrypted, 300)
    }

    func testAThrowingCallbackStopsTheBatch() throws {
        struct AppError: Error {}
        let (alice, bob) = try pair()
        let queue = try queueFrom(alice, 10)
        expectError(121, "CallbackFailed") { _ = try bob.decryptBatch(queue: queue, delivery: Collector { _, _ in throw AppError() }) }
        XCTAssertEqual(try bob.decryptBatch(queue: queue, delivery: Collector()).decrypted, 10)
    }

    func testCallingTheClientFromItsOwnCallbackFailsWithClientBusy() throws {
        let (alice, bob) = try pair()
        var inner: ProteusError?
        let collector = Collector { _, _ in
            do { _ = try bob.encrypt(sessionId: "alice", plaintext: bytes("re-entrant")) } catch let e as ProteusError { inner = e }
            return true
        }
        XCTAssertEqual(try bob.decryptBatch(queue: try queueFrom(alice, 5), delivery: collector).decrypted, 5)
        XCTAssertEqual(inner?.code, 120)
        XCTAssertEqual(inner?.kind, "ClientBusy")
        // Thrown out of the callback, it is what decryptBatch throws.
        let queue = try queueFrom(alice, 5, "second")
        expectError(120, "ClientBusy") { _ = try bob.decryptBatch(queue: queue, delivery: Collector { _, _ in _ = try bob.fingerprint(); return true }) }
        XCTAssertEqual(try bob.decryptBatch(queue: queue, delivery: Collector()).decrypted, 5)
    }

    func testByDefaultProgressComesAtASteadyRateAndAtTheEnd() throws {
        let (alice, bob) = try pair()
        let collector = Collector()
        _ = try bob.decryptBatch(queue: try queueFrom(alice, 2500), delivery: collector)
        let done = collector.progress.map { $0.done }
        XCTAssertGreaterThanOrEqual(done.count, 3)
        XCTAssertEqual(done, done.sorted())
        XCTAssertEqual(done.last, 2500)
        XCTAssertEqual(collector.results.count, 2500)
    }
}

final class PersistenceTests: XCTestCase {
    func testIdentityPrekeysAndSessionsSurviveCloseAndReopen() throws {
        let path = tempStore()
        let peer = try Client.inMemory()
        var fingerprint = ""
        do {
            let bob = try Client.open(path: path)
            fingerprint = try bob.fingerprint()
            let bundles = try bob.generatePrekeys(count: 3)
            try peer.createSession(sessionId: "bob", bundle: bundles[0].bytes)
            XCTAssertEqual(text(try bob.decrypt(sessionId: "peer", envelope: try peer.encrypt(sessionId: "bob", plaintext: bytes("one")))), "one")
            XCTAssertEqual(text(try peer.decrypt(sessionId: "bob", envelope: try bob.encrypt(sessionId: "peer", plaintext: bytes("two")))), "two")
        } // the last reference goes: the store is closed
        let bob = try Client.openWith(path: path, mode: .existing, options: ClientOptions())
        XCTAssertEqual(try bob.fingerprint(), fingerprint)
        XCTAssertEqual(try bob.prekeysRemaining(), 2)
        XCTAssertEqual(try bob.sessionIds(), ["peer"])
        XCTAssertEqual(text(try bob.decrypt(sessionId: "peer", envelope: try peer.encrypt(sessionId: "bob", plaintext: bytes("three")))), "three")
        XCTAssertEqual(text(try peer.decrypt(sessionId: "bob", envelope: try bob.encrypt(sessionId: "peer", plaintext: bytes("four")))), "four")
    }

    func testACommittedBatchStaysCommittedAndAnAbortedOneLeavesNothing() throws {
        let path = tempStore()
        let alice = try Client.inMemory()
        do {
            let bob = try Client.open(path: path)
            try alice.createSession(sessionId: "bob", bundle: try bob.generatePrekeys(count: 1)[0].bytes)
        }
        let first = try queueFrom(alice, 50, "first")
        let second = try queueFrom(alice, 50, "second")
        do {
            let bob = try Client.open(path: path)
            XCTAssertEqual(try bob.decryptBatch(queue: first, delivery: Collector()).decrypted, 50)
            expectError(108, "BatchAborted") { _ = try bob.decryptBatch(queue: second, delivery: Collector { _, _ in false }) }
        }
        let bob = try Client.open(path: path)
        XCTAssertEqual(try bob.decryptBatch(queue: first, delivery: Collector()).alreadySeen, 50)
        XCTAssertEqual(try bob.decryptBatch(queue: second, delivery: Collector()).decrypted, 50)
    }
}
