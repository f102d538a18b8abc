import Foundation
import XCTest
@testable import Proteus

/// Every call is `async throws`, runs off the caller's thread, and can be cancelled.
final class AsyncTests: XCTestCase {
    func testCancellingATaskInTheMiddleOfABatchCommitsNothing() async throws {
        let (alice, bob) = try await pair()
        let queue = try await queueFrom(alice, 3000)
        let firstChunk = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let chunks = Counter()
        let task = Task {
            try await bob.decryptBatch(queue: queue, maxChunk: 100, progressIntervalMs: 0) { _, _ in
                chunks.add()
                firstChunk.signal()
                _ = release.wait(timeout: .now() + 30)
                return true
            }
        }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async { firstChunk.wait(); c.resume() }
        }
        // Cancelled while the callback holds the first chunk: when the callback returns, the
        // batch stops before its commit and the Task throws CancellationError.
        task.cancel()
        release.signal()
        let outcome = await task.result
        XCTAssertThrowsError(try outcome.get()) { XCTAssertTrue($0 is CancellationError, "\($0)") }
        await assertFalse(try await bob.hasSession(sessionId: "alice"))
        await assertEqual(try await bob.prekeysRemaining(), 1)
        XCTAssertEqual(chunks.value, 1, "the batch stopped at its next chunk")
        // The client goes on: the whole queue decrypts.
        await assertEqual(try await bob.decryptBatch(queue: queue) { _, _ in true }.decrypted, 3000)
    }

    func testTheCallbackRunsOffTheCallersThread() async throws {
        let (alice, bob) = try await pair()
        let caller = Thread.current
        let seen = Counter()
        _ = try await bob.decryptBatch(queue: try await queueFrom(alice, 3)) { _, _ in
            if Thread.current != caller { seen.add() }
            return true
        }
        XCTAssertEqual(seen.value, 1)
    }

    func testEraseDeletedSaysTheUsedPrekeyIsGoneFromTheDisk() async throws {
        let alice = try await Client.inMemory()
        await assertEqual(try await alice.eraseDeleted(), true)
        let bob = try await Client.open(path: tempStore())
        let bundle = try await bob.generatePrekeys(count: 1)[0]
        try await alice.createSession(sessionId: "bob", bundle: bundle.bytes)
        let hello = try await alice.encrypt(sessionId: "bob", plaintext: bytes("hi"))
        await assertEqual(text(try await bob.decrypt(sessionId: "alice", envelope: hello)), "hi")
        await assertEqual(try await bob.prekeysRemaining(), 0)
        await assertEqual(try await bob.eraseDeleted(), true)
        try await bob.close()
    }

    func testCloseWaitsThenRefusesCallsWith122() async throws {
        let path = tempStore()
        let client = try await Client.open(path: path)
        let fingerprint = try await client.fingerprint()
        try await client.close()
        await expectError(122, .clientClosed) { _ = try await client.fingerprint() }
        try await client.close()
        // The store is closed and opens again.
        let again = try await Client.open(path: path, mode: .existing)
        await assertEqual(try await again.fingerprint(), fingerprint)
        try await again.close()
    }

    func testIntegersOutOfRangeAre309() async throws {
        let client = try await Client.inMemory()
        await expectError(309, .integerOutOfRange) { _ = try await client.generatePrekeys(count: -1) }
        await expectError(309, .integerOutOfRange) { _ = try await client.prekeyBundle(id: 65_536) }
        await expectError(309, .integerOutOfRange) { _ = try await Client.inMemory(options: ClientOptions(waitTimeoutMs: -1)) }
        await expectError(309, .integerOutOfRange) { _ = try await Client.inMemory(options: ClientOptions(batchThreads: 0)) }
        await assertEqual(try await client.prekeyBundle(id: 65_535), try await client.lastResortBundle())
    }
}

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var n = 0
    func add() { lock.lock(); n += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return n }
}

/// Stores sealed with a 32-byte key from the Keychain: open, seal, rekey, delete.
final class SealedStoreTests: XCTestCase {
    let key = Data((1...32).map { UInt8($0) })
    let otherKey = Data((0..<32).map { UInt8(0xa0 + $0) })

    private func rawBytes(_ path: String) -> Data {
        ["", "-wal"].compactMap { FileManager.default.contents(atPath: path + $0) }.reduce(Data(), +)
    }

    /// Every 32-byte window of the exported identity that does not start inside its public key.
    private func secretWindows(_ client: Client) async throws -> [Data] {
        let export = try await client.exportIdentity()
        let publicKey = try await client.identityKey()
        return (0...(export.count - 32)).map { export.subdata(in: $0..<($0 + 32)) }
            .filter { publicKey.range(of: $0.prefix(8)) == nil }
    }

    func testASealedFileHoldsNoIdentitySecretAndAPlainOneDoes() async throws {
        let sealed = tempStore(), plain = tempStore()
        let s = try await Client.open(path: sealed, storeKey: key)
        _ = try await s.generatePrekeys(count: 5)
        let sealedSecrets = try await secretWindows(s)
        try await s.close()
        let p = try await Client.open(path: plain)
        let plainSecrets = try await secretWindows(p)
        try await p.close()
        XCTAssertFalse(sealedSecrets.isEmpty)
        XCTAssertTrue(plainSecrets.contains { rawBytes(plain).range(of: $0) != nil }, "the check finds a plain secret")
        let raw = rawBytes(sealed)
        XCTAssertFalse(sealedSecrets.contains { raw.range(of: $0) != nil }, "an identity secret is in the sealed file")
    }

    func testWrongOrMissingKeysChangeNothing() async throws {
        let path = tempStore()
        let c = try await Client.open(path: path, storeKey: key)
        let fingerprint = try await c.fingerprint()
        try await c.close()
        let before = rawBytes(path)
        await expectError(510, .storeKeyRequired) { _ = try await Client.open(path: path) }
        await expectError(508, .wrongStoreKey) { _ = try await Client.open(path: path, storeKey: self.otherKey) }
        await expectError(508, .wrongStoreKey) { try await Client.rekeyStore(path: path, oldKey: self.otherKey, newKey: self.key) }
        XCTAssertEqual(before, rawBytes(path))
        try await Client.rekeyStore(path: path, oldKey: key, newKey: otherKey)
        let again = try await Client.open(path: path, storeKey: otherKey, mode: .existing)
        await assertEqual(try await again.fingerprint(), fingerprint)
        try await again.close()
        let plain = tempStore()
        try await Client.open(path: plain).close()
        await expectError(509, .storeNotSealed) { _ = try await Client.open(path: plain, storeKey: self.key) }
        try await Client.sealStore(path: plain, key: key)
        await expectError(510, .storeKeyRequired) { _ = try await Client.open(path: plain) }
        try await Client.open(path: plain, storeKey: key).close()
        try await Client.deleteStore(path: plain)
        XCTAssertFalse(FileManager.default.fileExists(atPath: plain))
        await expectError(504, .storeNotFound) { _ = try await Client.open(path: plain, mode: .existing) }
    }
}

/// encryptFor, identityKey, prekeyMessageFingerprint.
final class FanoutTests: XCTestCase {
    func testOnePlaintextToManySessions() async throws {
        let alice = try await Client.inMemory()
        var peers: [Client] = []
        for i in 0..<4 {
            let peer = try await Client.inMemory()
            try await alice.createSession(sessionId: "peer:\(i)", bundle: try await peer.generatePrekeys(count: 1)[0].bytes)
            peers.append(peer)
        }
        let ids = ["peer:0", "nobody", "peer:1", "peer:2", "peer:3"]
        let results = try await alice.encryptFor(sessionIds: ids, plaintext: bytes("to the group"))
        XCTAssertEqual(results.map { $0.sessionId }, ids)
        XCTAssertEqual(results[1].error?.kind, .sessionNotFound)
        XCTAssertNil(results[1].envelope)
        for r in results where r.error == nil {
            let peer = peers[Int(r.sessionId.dropFirst(5))!]
            let first = try XCTUnwrap(r.envelope)
            await assertEqual(try prekeyMessageFingerprint(envelope: first), try await alice.fingerprint())
            await assertEqual(text(try await peer.decrypt(sessionId: "alice", envelope: first)), "to the group")
        }
        let key = try await alice.identityKey()
        XCTAssertEqual(key.count, 32)
        await assertEqual(hexString(key), try await alice.fingerprint())
    }
}

/// The app's commit counter, in memory (the Keychain, in an app).
private final class MemoryCounter: CommitCounter, @unchecked Sendable {
    private let lock = NSLock()
    private var value: Int64 = 0
    func load() throws -> Int64 {
        lock.lock(); defer { lock.unlock() }
        return value
    }
    func store(count: Int64) throws {
        lock.lock(); defer { lock.unlock() }
        value = count
    }
}

final class RollbackTests: XCTestCase {
    func testAStoreRestoredFromAnOlderCopyIsRefusedWithTheAppsCounter() async throws {
        let path = tempStore()
        let backup = path + ".backup"
        let counter = MemoryCounter()
        var client = try await Client.open(path: path, commitCounter: counter)
        _ = try await client.generatePrekeys(count: 2)
        try await client.close()
        try FileManager.default.copyItem(atPath: path, toPath: backup)
        client = try await Client.open(path: path, commitCounter: counter)
        _ = try await client.generatePrekeys(count: 1)
        try await client.close()
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.copyItem(atPath: backup, toPath: path)
        await expectError(511, .storeRolledBack) { _ = try await Client.open(path: path, commitCounter: counter) }
    }
}

