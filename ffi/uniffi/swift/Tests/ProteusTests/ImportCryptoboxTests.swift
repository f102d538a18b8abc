import Foundation
import XCTest
@testable import Proteus

/// importCryptobox on the stores Wire's real cryptobox 12.8.0 wrote (tests/cryptobox/fixtures):
/// the Rust cryptobox directory Wire's iOS app kept, and the same records given one by one. The
/// queue its peers encrypted before the migration decrypts after it.
final class ImportCryptoboxTests: XCTestCase {
    private let fixtures = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()
        .appendingPathComponent("../../../../../tests/cryptobox/fixtures")
        .standardizedFileURL

    private func expected() throws -> (fingerprint: String, queue: [(String, Data, String)]) {
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: fixtures.appendingPathComponent("expected.json"))) as! [String: Any]
        let queue = (json["queue"] as! [[String: String]]).map {
            ($0["sessionId"]!, Data(base64Encoded: $0["envelope"]!)!, $0["plaintext"]!)
        }
        return (json["fingerprint"] as! String, queue)
    }

    private func decryptsTheQueue(_ client: Client) async throws {
        let queue = try expected().queue
        XCTAssertEqual(queue.count, 15)
        for (sessionId, envelope, plaintext) in queue {
            await assertEqual(text(try await client.decrypt(sessionId: sessionId, envelope: envelope)), plaintext)
        }
    }

    private final class Progress: ImportProgress, @unchecked Sendable {
        private let lock = NSLock()
        private var seen: [(Int32, Int32)] = []
        func progress(done: Int32, total: Int32) {
            lock.lock(); defer { lock.unlock() }
            seen.append((done, total))
        }
        var last: (Int32, Int32)? {
            lock.lock(); defer { lock.unlock() }
            return seen.last
        }
    }

    func testARustCryptoboxDirectoryImportsIntoADurableStoreInOneCall() async throws {
        let path = tempStore()
        let progress = Progress()
        let client = try await Client.open(path: path)
        let report = try await client.importCryptobox(
            source: .directory(path: fixtures.appendingPathComponent("rust-cryptobox").path),
            onProgress: progress
        )
        XCTAssertEqual(report, ImportReport(fingerprint: try expected().fingerprint, prekeys: 6, sessions: 3, skipped: [], alreadyImported: false))
        XCTAssertEqual(progress.last?.0, 10)
        XCTAssertEqual(progress.last?.1, 10)
        try await client.close()

        let reopened = try await Client.open(path: path)
        await assertEqual(try await reopened.fingerprint(), try expected().fingerprint)
        try await decryptsTheQueue(reopened)
        let again = try await reopened.importCryptobox(source: .directory(path: fixtures.appendingPathComponent("fs-store").path))
        XCTAssertTrue(again.alreadyImported)
    }

    func testRecordsTheAppReadItselfImportAndBadOnesAreNamed() async throws {
        let dir = fixtures.appendingPathComponent("rust-cryptobox-legacy")
        let files = { (sub: String) throws -> [URL] in
            try FileManager.default.contentsOfDirectory(at: dir.appendingPathComponent(sub), includingPropertiesForKeys: nil)
                .sorted { $0.lastPathComponent < $1.lastPathComponent }
        }
        let identity = try Data(contentsOf: dir.appendingPathComponent("identities/local_identity"))
        let prekeys = try files("prekeys").map { try Data(contentsOf: $0) }
        let sessions = try files("sessions").map { CryptoboxSession(id: $0.lastPathComponent, bytes: try Data(contentsOf: $0)) }
        let bad = CryptoboxSource.records(identity: identity, prekeys: prekeys + [Data([1, 2, 3])], sessions: sessions)

        let client = try await Client.inMemory()
        let e = await expectError(112, .importBadRecords) { _ = try await client.importCryptobox(source: bad) }
        XCTAssertTrue(e?.detail.contains("prekeys/#6") ?? false, e?.detail ?? "")
        await assertEqual(try await client.sessionIds(), [])

        let report = try await client.importCryptobox(source: bad, skipBadRecords: true)
        XCTAssertEqual(report.skipped.map { [$0.table, $0.id] }, [["prekeys", "#6"]])
        XCTAssertEqual(report.sessions, 3)
        try await decryptsTheQueue(client)
    }

    func testAStoreInUseWithAnotherIdentityIsRefused() async throws {
        let client = try await Client.inMemory()
        _ = try await client.generatePrekeys(count: 1)
        await expectError(111, .importIdentityMismatch) {
            _ = try await client.importCryptobox(source: .directory(path: self.fixtures.appendingPathComponent("fs-store").path))
        }
        await expectError(515, .importSourceUnreadable) {
            _ = try await client.importCryptobox(source: .directory(path: self.fixtures.appendingPathComponent("missing").path))
        }
        await assertEqual(try await client.prekeysRemaining(), 1)
    }
}
