import Foundation
import XCTest
@testable import Proteus

final class IdentityAndBundlesTests: XCTestCase {
    func testEveryClientHasItsOwnIdentityAndAHexFingerprint() throws {
        let a = try Client.inMemory()
        let b = try Client.inMemory()
        let fp = try a.fingerprint()
        XCTAssertEqual(fp.count, 64)
        XCTAssertTrue(fp.allSatisfy { "0123456789abcdef".contains($0) })
        XCTAssertEqual(fp, try a.fingerprint())
        XCTAssertNotEqual(fp, try b.fingerprint())
    }

    func testGeneratedPrekeysHaveDistinctIdsAndNameOurIdentity() throws {
        let client = try Client.inMemory()
        XCTAssertEqual(try client.prekeysRemaining(), 0)
        let bundles = try client.generatePrekeys(count: 5)
        XCTAssertEqual(Set(bundles.map { $0.id }).count, 5)
        XCTAssertFalse(bundles.contains { $0.id == UInt16.max })
        XCTAssertEqual(try client.prekeysRemaining(), 5)
        for bundle in bundles {
            XCTAssertEqual(try bundleFingerprint(bundle: bundle.bytes), try client.fingerprint())
            XCTAssertEqual(try client.prekeyBundle(id: bundle.id), bundle)
        }
    }

    func testTheLastResortBundleIsNeverUsedUp() throws {
        let alice = try Client.inMemory()
        let bob = try Client.inMemory()
        let lastResort = try bob.lastResortBundle()
        XCTAssertEqual(lastResort.id, UInt16.max)
        try alice.createSession(sessionId: "bob", bundle: lastResort.bytes)
        XCTAssertEqual(text(try bob.decrypt(sessionId: "alice", envelope: try alice.encrypt(sessionId: "bob", plaintext: bytes("hi")))), "hi")
        XCTAssertEqual(try bob.lastResortBundle(), lastResort)
    }

    /// RFC 8032, section 7.1, TEST 1 and TEST 2 (seed, public key, message, signature): the
    /// identity built from the seed must sign exactly as Ed25519 does.
    func testSignaturesOfAnImportedIdentityAreThoseOfRFC8032() throws {
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
            let client = try Client.inMemory()
            try client.importIdentity(identity: identityBlob(seed: seed, publicKey: publicKey))
            XCTAssertEqual(try client.fingerprint(), publicKey)
            XCTAssertEqual(hexString(try client.sign(message: hexData(message))), signature)
        }
    }

    func testSignIsDeterministicAndSpecificToKeyAndMessage() throws {
        let a = try Client.inMemory()
        let b = try Client.inMemory()
        let message = bytes("relay-auth:v1:challenge 0123456789")
        let signature = try a.sign(message: message)
        XCTAssertEqual(signature.count, 64)
        XCTAssertEqual(try a.sign(message: message), signature)
        XCTAssertNotEqual(try a.sign(message: bytes("relay-auth:v1:challenge 0123456788")), signature)
        XCTAssertNotEqual(try b.sign(message: message), signature)
        // The same identity in another client signs the same way.
        let copy = try Client.inMemory()
        try copy.importIdentity(identity: try a.exportIdentity())
        XCTAssertEqual(try copy.sign(message: message), signature)
    }

    func testAnExportedIdentityImportsIntoAnotherClient() throws {
        let original = try Client.inMemory()
        let copy = try Client.inMemory()
        try copy.importIdentity(identity: try original.exportIdentity())
        XCTAssertEqual(try copy.fingerprint(), try original.fingerprint())
    }

    func testMessageIdsAreStable() throws {
        let (alice, _) = try pair()
        let envelope = try alice.encrypt(sessionId: "bob", plaintext: bytes("x"))
        XCTAssertEqual(messageId(envelope: envelope).count, 64)
        XCTAssertEqual(messageId(envelope: envelope), messageId(envelope: envelope))
        // The envelope's MAC: a3 00 01 01 a1 00 58 20 <32 bytes> 02 <message>.
        let mac = envelope.subdata(in: 8..<40).map { String(format: "%02x", $0) }.joined()
        XCTAssertEqual(messageId(envelope: envelope), mac)
    }
}

final class SessionTests: XCTestCase {
    func testASessionFromABundleWorksBothWays() throws {
        let (alice, bob) = try pair()
        XCTAssertEqual(try bob.prekeysRemaining(), 1)
        let hello = try alice.encrypt(sessionId: "bob", plaintext: bytes("hello bob"))
        XCTAssertFalse(try bob.hasSession(sessionId: "alice"))
        XCTAssertEqual(text(try bob.decrypt(sessionId: "alice", envelope: hello)), "hello bob")
        XCTAssertTrue(try bob.hasSession(sessionId: "alice"))
        XCTAssertEqual(try bob.prekeysRemaining(), 0)
        XCTAssertEqual(try bob.remoteFingerprint(sessionId: "alice"), try alice.fingerprint())
        XCTAssertEqual(try alice.remoteFingerprint(sessionId: "bob"), try bob.fingerprint())
        for round in 0..<3 {
            let toAlice = try bob.encrypt(sessionId: "alice", plaintext: bytes("reply \(round)"))
            XCTAssertEqual(text(try alice.decrypt(sessionId: "bob", envelope: toAlice)), "reply \(round)")
            let toBob = try alice.encrypt(sessionId: "bob", plaintext: bytes("again \(round)"))
            XCTAssertEqual(text(try bob.decrypt(sessionId: "alice", envelope: toBob)), "again \(round)")
        }
    }

    func testSessionIdsAndDelete() throws {
        let alice = try Client.inMemory()
        for i in 0..<3 {
            let peer = try Client.inMemory()
            try alice.createSession(sessionId: "peer:\(i)", bundle: try peer.generatePrekeys(count: 1)[0].bytes)
        }
        XCTAssertEqual(try alice.sessionIds().sorted(), ["peer:0", "peer:1", "peer:2"])
        try alice.deleteSession(sessionId: "peer:1")
        XCTAssertFalse(try alice.hasSession(sessionId: "peer:1"))
        XCTAssertEqual(try alice.sessionIds().sorted(), ["peer:0", "peer:2"])
    }

    func testEncryptBatchForSeveralSessions() throws {
        let alice = try Client.inMemory()
        let phone = try Client.inMemory()
        let laptop = try Client.inMemory()
        try alice.createSession(sessionId: "bob:phone", bundle: try phone.generatePrekeys(count: 1)[0].bytes)
        try alice.createSession(sessionId: "bob:laptop", bundle: try laptop.generatePrekeys(count: 1)[0].bytes)
        let envelopes = try alice.encryptBatch(messages: [
            OutgoingMessage(sessionId: "bob:phone", plaintext: bytes("to phone")),
            OutgoingMessage(sessionId: "bob:laptop", plaintext: bytes("to laptop")),
        ])
        XCTAssertEqual(text(try phone.decrypt(sessionId: "alice", envelope: envelopes[0])), "to phone")
        XCTAssertEqual(text(try laptop.decrypt(sessionId: "alice", envelope: envelopes[1])), "to laptop")
    }

    func testAnExportedSessionContinuesInAClientOfTheSameIdentity() throws {
        let (alice, bob) = try establishedPair()
        let copy = try Client.inMemory()
        try copy.importIdentity(identity: try alice.exportIdentity())
        try copy.importSession(sessionId: "bob", session: try alice.exportSession(sessionId: "bob"))
        XCTAssertEqual(text(try bob.decrypt(sessionId: "alice", envelope: try copy.encrypt(sessionId: "bob", plaintext: bytes("from the copy")))), "from the copy")
    }
}
