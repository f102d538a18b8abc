import Foundation
import XCTest
@testable import Proteus

/// Identity pinning: `ClientOptions(identityPinning: true)`, `pinnedIdentity`, `acceptIdentity`.
final class PinningTests: XCTestCase {
    private func firstMessage(_ from: Client, _ to: Client) async throws -> Data {
        try await from.createSession(sessionId: "bob", bundle: try await to.generatePrekeys(count: 1)[0].bytes)
        return try await from.encrypt(sessionId: "bob", plaintext: bytes("hello"))
    }

    func testANewIdentityUnderAPinnedSessionIdWaitsForAcceptIdentity() async throws {
        let bob = try await Client.inMemory(options: ClientOptions(identityPinning: true))
        let alice = try await Client.inMemory()
        await assertNil(try await bob.pinnedIdentity(sessionId: "alice"))
        await assertEqual(text(try await bob.decrypt(sessionId: "alice", envelope: try await firstMessage(alice, bob))), "hello")
        await assertEqual(try await bob.pinnedIdentity(sessionId: "alice"), try await alice.fingerprint())
        try await bob.deleteSession(sessionId: "alice")
        await assertEqual(try await bob.pinnedIdentity(sessionId: "alice"), try await alice.fingerprint())

        // Someone else under that id: refused, also in a batch, where it is the message's result.
        let other = try await Client.inMemory()
        let held = try await firstMessage(other, bob)
        _ = await expectError(204, .remoteIdentityChanged) { _ = try await bob.decrypt(sessionId: "alice", envelope: held) }
        let collector = Collector()
        let summary = try await bob.decryptBatch(queue: [QueuedMessage(sessionId: "alice", envelope: held)], delivery: collector)
        await assertEqual(summary.failed, 1)
        let result = collector.results[0]
        await assertEqual(result.errorCode, 204)
        await assertEqual(result.errorKind, .remoteIdentityChanged)
        await assertEqual(result.sender, try await other.fingerprint())
        await assertFalse(try await bob.hasSession(sessionId: "alice"))

        try await bob.acceptIdentity(sessionId: "alice", fingerprint: try await other.fingerprint())
        await assertEqual(try await bob.pinnedIdentity(sessionId: "alice"), try await other.fingerprint())
        let again = Collector()
        _ = try await bob.decryptBatch(queue: [QueuedMessage(sessionId: "alice", envelope: held)], delivery: again)
        await assertEqual(text(again.results[0].plaintext), "hello")
        await assertEqual(again.results[0].messageId, result.messageId)
    }

    func testForgetSessionDeletesTheSessionAndItsPinAndTheIdIsPinnedAnew() async throws {
        let bob = try await Client.inMemory(options: ClientOptions(identityPinning: true))
        let alice = try await Client.inMemory()
        _ = try await bob.decrypt(sessionId: "alice", envelope: try await firstMessage(alice, bob))
        try await bob.forgetSession(sessionId: "alice")
        await assertFalse(try await bob.hasSession(sessionId: "alice"))
        await assertNil(try await bob.pinnedIdentity(sessionId: "alice"))
        let carol = try await Client.inMemory()
        await assertEqual(text(try await bob.decrypt(sessionId: "alice", envelope: try await firstMessage(carol, bob))), "hello")
        await assertEqual(try await bob.pinnedIdentity(sessionId: "alice"), try await carol.fingerprint())
        try await bob.forgetSession(sessionId: "nobody")
        _ = await expectError(106, .invalidSessionId) { try await bob.forgetSession(sessionId: "") }
    }

    func testABundleOfAnotherIdentityIsRefusedAndBadInputIsATypedError() async throws {
        let bob = try await Client.inMemory(options: ClientOptions(identityPinning: true))
        let alice = try await Client.inMemory()
        let other = try await Client.inMemory()
        try await bob.createSession(sessionId: "alice", bundle: try await alice.generatePrekeys(count: 1)[0].bytes)
        let bundle = try await other.generatePrekeys(count: 1)[0].bytes
        _ = await expectError(204, .remoteIdentityChanged) { _ = try await bob.resetSession(sessionId: "alice", bundle: bundle) }
        await assertEqual(try await bob.remoteFingerprint(sessionId: "alice"), try await alice.fingerprint())
        try await bob.acceptIdentity(sessionId: "alice", fingerprint: try await other.fingerprint())
        await assertFalse(try await bob.hasSession(sessionId: "alice"))
        try await bob.createSession(sessionId: "alice", bundle: bundle)
        await assertEqual(try await bob.remoteFingerprint(sessionId: "alice"), try await other.fingerprint())

        _ = await expectError(411, .invalidFingerprint) { try await bob.acceptIdentity(sessionId: "alice", fingerprint: "abc") }
        _ = await expectError(411, .invalidFingerprint) { try await bob.acceptIdentity(sessionId: "alice", fingerprint: String(repeating: "z", count: 64)) }
        let fp = try await other.fingerprint()
        _ = await expectError(106, .invalidSessionId) { try await bob.acceptIdentity(sessionId: "", fingerprint: fp) }
        _ = await expectError(106, .invalidSessionId) { _ = try await bob.pinnedIdentity(sessionId: "") }
    }

    func testWithoutTheOptionNothingIsPinnedAndAPinSurvivesReopening() async throws {
        let plain = try await Client.inMemory()
        let alice = try await Client.inMemory()
        _ = try await plain.decrypt(sessionId: "alice", envelope: try await firstMessage(alice, plain))
        await assertNil(try await plain.pinnedIdentity(sessionId: "alice"))

        let path = tempStore()
        let options = ClientOptions(identityPinning: true)
        let carol = try await Client.inMemory()
        let bob = try await Client.open(path: path, options: options)
        try await bob.createSession(sessionId: "carol", bundle: try await carol.generatePrekeys(count: 1)[0].bytes)
        try await bob.deleteSession(sessionId: "carol")
        try await bob.close()
        let reopened = try await Client.open(path: path, options: options)
        await assertEqual(try await reopened.pinnedIdentity(sessionId: "carol"), try await carol.fingerprint())
        let other = try await Client.inMemory()
        let bundle = try await other.generatePrekeys(count: 1)[0].bytes
        _ = await expectError(204, .remoteIdentityChanged) { try await reopened.createSession(sessionId: "carol", bundle: bundle) }
        try await reopened.close()
    }
}
