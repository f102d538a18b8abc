import Foundation
import XCTest
@testable import Proteus

final class IdentityAndBundlesTests: XCTestCase {
    func testEveryClientHasItsOwnIdentityAndAHexFingerprint() async throws {
        let a = try await Client.inMemory()
        let b = try await Client.inMemory()
        let fp = try await a.fingerprint()
        await assertEqual(fp.count, 64)
        await assertTrue(fp.allSatisfy { "0123456789abcdef".contains($0) })
        await assertEqual(fp, try await a.fingerprint())
        await assertNotEqual(fp, try await b.fingerprint())
    }

    func testGeneratedPrekeysHaveDistinctIdsAndNameOurIdentity() async throws {
        let client = try await Client.inMemory()
        await assertEqual(try await client.prekeysRemaining(), 0)
        let bundles = try await client.generatePrekeys(count: 5)
        await assertEqual(Set(bundles.map { $0.id }).count, 5)
        await assertFalse(bundles.contains { $0.id == 65535 })
        await assertEqual(try await client.prekeysRemaining(), 5)
        for bundle in bundles {
            await assertEqual(try await bundleFingerprint(bundle: bundle.bytes), try await client.fingerprint())
            await assertEqual(try await client.prekeyBundle(id: bundle.id), bundle)
        }
    }

    func testTheLastResortBundleIsNeverUsedUp() async throws {
        let alice = try await Client.inMemory()
        let bob = try await Client.inMemory()
        let lastResort = try await bob.lastResortBundle()
        await assertEqual(lastResort.id, 65535)
        try await alice.createSession(sessionId: "bob", bundle: lastResort.bytes)
        await assertEqual(text(try await bob.decrypt(sessionId: "alice", envelope: try await alice.encrypt(sessionId: "bob", plaintext: bytes("hi")))), "hi")
        await assertEqual(try await bob.lastResortBundle(), lastResort)
    }

    /// RFC 8032, section 7.1, TEST 1 and TEST 2 (seed, public key, message, signature): the
    /// identity built from the seed must sign exactly as Ed25519 does.
    func testSignaturesOfAnImportedIdentityAreThoseOfRFC8032() async throws {
        let vectors = [
            ("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
             "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
             "",
             "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155"
                + "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"),
            ("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
             "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
             "72",
             "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da"
                + "085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"),
        ]
        for (seed, publicKey, message, signature) in vectors {
            let client = try await Client.inMemory()
            try await client.importIdentity(identity: identityBlob(seed: seed, publicKey: publicKey))
            await assertEqual(try await client.fingerprint(), publicKey)
            await assertEqual(hexString(try await client.sign(message: hexData(message))), signature)
        }
    }

    func testSignIsDeterministicAndSpecificToKeyAndMessage() async throws {
        let a = try await Client.inMemory()
        let b = try await Client.inMemory()
        let message = bytes("relay-auth:v1:challenge 0123456789")
        let signature = try await a.sign(message: message)
        await assertEqual(signature.count, 64)
        await assertEqual(try await a.sign(message: message), signature)
        await assertNotEqual(try await a.sign(message: bytes("relay-auth:v1:challenge 0123456788")), signature)
        await assertNotEqual(try await b.sign(message: message), signature)
        // The same identity in another client signs the same way.
        let copy = try await Client.inMemory()
        try await copy.importIdentity(identity: try await a.exportIdentity())
        await assertEqual(try await copy.sign(message: message), signature)
    }

    func testAnExportedIdentityImportsIntoAnotherClient() async throws {
        let original = try await Client.inMemory()
        let copy = try await Client.inMemory()
        try await copy.importIdentity(identity: try await original.exportIdentity())
        await assertEqual(try await copy.fingerprint(), try await original.fingerprint())
    }

    func testMessageIdsAreStable() async throws {
        let (alice, _) = try await pair()
        let envelope = try await alice.encrypt(sessionId: "bob", plaintext: bytes("x"))
        await assertEqual(messageId(envelope: envelope).count, 64)
        await assertEqual(messageId(envelope: envelope), messageId(envelope: envelope))
        // The envelope's MAC: a3 00 01 01 a1 00 58 20 <32 bytes> 02 <message>.
        let mac = envelope.subdata(in: 8..<40).map { String(format: "%02x", $0) }.joined()
        await assertEqual(messageId(envelope: envelope), mac)
    }
}

final class SessionTests: XCTestCase {
    func testASessionFromABundleWorksBothWays() async throws {
        let (alice, bob) = try await pair()
        await assertEqual(try await bob.prekeysRemaining(), 1)
        let hello = try await alice.encrypt(sessionId: "bob", plaintext: bytes("hello bob"))
        await assertFalse(try await bob.hasSession(sessionId: "alice"))
        await assertEqual(text(try await bob.decrypt(sessionId: "alice", envelope: hello)), "hello bob")
        await assertTrue(try await bob.hasSession(sessionId: "alice"))
        await assertEqual(try await bob.prekeysRemaining(), 0)
        await assertEqual(try await bob.remoteFingerprint(sessionId: "alice"), try await alice.fingerprint())
        await assertEqual(try await alice.remoteFingerprint(sessionId: "bob"), try await bob.fingerprint())
        for round in 0..<3 {
            let toAlice = try await bob.encrypt(sessionId: "alice", plaintext: bytes("reply \(round)"))
            await assertEqual(text(try await alice.decrypt(sessionId: "bob", envelope: toAlice)), "reply \(round)")
            let toBob = try await alice.encrypt(sessionId: "bob", plaintext: bytes("again \(round)"))
            await assertEqual(text(try await bob.decrypt(sessionId: "alice", envelope: toBob)), "again \(round)")
        }
    }

    func testSessionIdsAndDelete() async throws {
        let alice = try await Client.inMemory()
        for i in 0..<3 {
            let peer = try await Client.inMemory()
            try await alice.createSession(sessionId: "peer:\(i)", bundle: try await peer.generatePrekeys(count: 1)[0].bytes)
        }
        await assertEqual(try await alice.sessionIds().sorted(), ["peer:0", "peer:1", "peer:2"])
        try await alice.deleteSession(sessionId: "peer:1")
        await assertFalse(try await alice.hasSession(sessionId: "peer:1"))
        await assertEqual(try await alice.sessionIds().sorted(), ["peer:0", "peer:2"])
    }

    func testEncryptBatchForSeveralSessions() async throws {
        let alice = try await Client.inMemory()
        let phone = try await Client.inMemory()
        let laptop = try await Client.inMemory()
        try await alice.createSession(sessionId: "bob:phone", bundle: try await phone.generatePrekeys(count: 1)[0].bytes)
        try await alice.createSession(sessionId: "bob:laptop", bundle: try await laptop.generatePrekeys(count: 1)[0].bytes)
        let envelopes = try await alice.encryptBatch(messages: [
            OutgoingMessage(sessionId: "bob:phone", plaintext: bytes("to phone")),
            OutgoingMessage(sessionId: "bob:laptop", plaintext: bytes("to laptop")),
        ])
        await assertEqual(text(try await phone.decrypt(sessionId: "alice", envelope: envelopes[0])), "to phone")
        await assertEqual(text(try await laptop.decrypt(sessionId: "alice", envelope: envelopes[1])), "to laptop")
    }

    func testAnExportedSessionContinuesInAClientOfTheSameIdentity() async throws {
        let (alice, bob) = try await establishedPair()
        let copy = try await Client.inMemory()
        try await copy.importIdentity(identity: try await alice.exportIdentity())
        try await copy.importSession(sessionId: "bob", session: try await alice.exportSession(sessionId: "bob"))
        await assertEqual(text(try await bob.decrypt(sessionId: "alice", envelope: try await copy.encrypt(sessionId: "bob", plaintext: bytes("from the copy")))), "from the copy")
    }

    func testTopUpPrekeysFillsTheStockAndResetSessionStartsOver() async throws {
        let carol = try await Client.inMemory()
        await assertEqual(try await carol.topUpPrekeys(target: 3).map(\.id), [0, 1, 2])
        await assertEqual(try await carol.topUpPrekeys(target: 3).count, 0)
        await assertEqual(try await carol.prekeysRemaining(), 3)

        let (alice, bob) = try await establishedPair()
        let old = try await bob.encrypt(sessionId: "alice", plaintext: bytes("on the old session"))
        let fresh = try await bob.generatePrekeys(count: 1)[0]
        await assertEqual(try await alice.resetSession(sessionId: "bob", bundle: fresh.bytes), false)
        let hello = try await alice.encrypt(sessionId: "bob", plaintext: bytes("new"))
        await assertEqual(text(try await bob.decrypt(sessionId: "alice", envelope: hello)), "new")
        await expectError(205, .unknownSessionTag) { _ = try await alice.decrypt(sessionId: "bob", envelope: old) }
        let other = try await carol.generatePrekeys(count: 1)[0]
        await assertEqual(try await alice.resetSession(sessionId: "bob", bundle: other.bytes), true)
        await assertEqual(try await alice.remoteFingerprint(sessionId: "bob"), try await carol.fingerprint())
    }
}
