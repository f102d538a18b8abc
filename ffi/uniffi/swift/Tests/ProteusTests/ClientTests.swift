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
