import Foundation
import XCTest
@testable import Proteus

/// The Swift constants (ProteusErrorCode, generated from the registry by
/// crates/proteus-core/tests/error_code_files.rs) against the native library's own registry,
/// `errorCodes()`: a constant that drifts, or a code the library gained, fails here.
final class ErrorCodeTests: XCTestCase {
    /// `PreKeyNotFound` -> `preKeyNotFound`, as the generator names the cases.
    private func caseName(_ name: String) -> String {
        name.prefix(1).lowercased() + name.dropFirst()
    }

    func testEveryCaseMatchesTheNativeRegistry() {
        let native = errorCodes()
        let swift = ProteusErrorCode.allCases
        XCTAssertGreaterThanOrEqual(native.count, 50)
        XCTAssertEqual(native.map { caseName($0.name) }, swift.map { String(describing: $0) })
        for (n, s) in zip(native, swift) {
            XCTAssertEqual(n.code, s.rawValue, n.name)
            XCTAssertEqual(n.kind, s.kind, n.name)
            XCTAssertEqual(n.family, s.family, n.name)
            XCTAssertEqual(n.alreadySeen, s.isAlreadySeen, n.name)
        }
        XCTAssertNil(ProteusErrorCode(rawValue: 109), "109 is retired")
    }

    func testErrorsAndBatchResultsCarryRegisteredCodes() throws {
        let (alice, bob) = try establishedPair()
        let e = expectError(ProteusErrorCode.sessionNotFound.rawValue, "SessionNotFound") {
            _ = try alice.encrypt(sessionId: "carol:phone-7f3a", plaintext: bytes("x"))
        }
        XCTAssertEqual(e?.errorCode, .sessionNotFound)
        // Session ids are user data: never in an error's text.
        XCTAssertFalse(e?.detail.contains("phone-7f3a") ?? true, e?.detail ?? "")
        let envelope = try alice.encrypt(sessionId: "bob", plaintext: bytes("once"))
        _ = try bob.decrypt(sessionId: "alice", envelope: envelope)
        let collector = Collector()
        _ = try bob.decryptBatch(queue: [QueuedMessage(sessionId: "alice", envelope: envelope),
                                         QueuedMessage(sessionId: "nobody", envelope: envelope)],
                                 delivery: collector)
        let codes = collector.results.map { ProteusErrorCode(rawValue: $0.errorCode ?? 0) }
        XCTAssertEqual(codes, [.duplicateMessage, .sessionNotFound])
        for r in collector.results {
            let code = ProteusErrorCode(rawValue: r.errorCode ?? 0)
            XCTAssertEqual(code?.kind, r.errorKind)
            XCTAssertEqual(code?.isAlreadySeen, r.alreadySeen)
        }
    }
}
