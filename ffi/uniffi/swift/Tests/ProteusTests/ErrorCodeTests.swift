import Foundation
import XCTest
@testable import Proteus

/// The Swift constants (ProteusErrorCode, generated from the registry by
/// ffi/codes/tests/error_code_files.rs) against the native library's own registry,
/// `errorCodes()`: a constant that drifts, or a code the library gained, fails here.
final class ErrorCodeTests: XCTestCase {
    /// `PreKeyNotFound` -> `preKeyNotFound`, as the generator names the cases.
    private func caseName(_ name: String) -> String {
        name.prefix(1).lowercased() + name.dropFirst()
    }

    func testEveryCaseMatchesTheNativeRegistry() async throws {
        let native = errorCodes()
        let swift = ProteusErrorCode.allCases
        await assertGreaterThanOrEqual(native.count, 50)
        await assertEqual(native.map { caseName($0.name) }, swift.map { String(describing: $0) })
        for (n, s) in zip(native, swift) {
            await assertEqual(n.code, s.rawValue, n.name)
            await assertEqual(n.kind, s.kind, n.name)
            await assertEqual(n.family, s.family, n.name)
            await assertEqual(n.alreadySeen, s.isAlreadySeen, n.name)
        }
        await assertNil(ProteusErrorCode(rawValue: 109), "109 is retired")
    }

    func testErrorsAndBatchResultsCarryRegisteredCodes() async throws {
        let (alice, bob) = try await establishedPair()
        let e = await expectError(ProteusErrorCode.sessionNotFound.rawValue, .sessionNotFound) {
            _ = try await alice.encrypt(sessionId: "carol:phone-7f3a", plaintext: bytes("x"))
        }
        await assertEqual(e?.errorCode, .sessionNotFound)
        // Session ids are user data: never in an error's text.
        await assertFalse(e?.detail.contains("phone-7f3a") ?? true, e?.detail ?? "")
        let envelope = try await alice.encrypt(sessionId: "bob", plaintext: bytes("once"))
        _ = try await bob.decrypt(sessionId: "alice", envelope: envelope)
        let collector = Collector()
        _ = try await bob.decryptBatch(queue: [QueuedMessage(sessionId: "alice", envelope: envelope),
                                         QueuedMessage(sessionId: "nobody", envelope: envelope)],
                                 delivery: collector)
        let codes = collector.results.map { ProteusErrorCode(rawValue: $0.errorCode ?? 0) }
        await assertEqual(codes, [.duplicateMessage, .sessionNotFound])
        for r in collector.results {
            let code = ProteusErrorCode(rawValue: r.errorCode ?? 0)
            await assertEqual(code.map { caseName($0.kind) }, r.errorKind.map { String(describing: $0) })
            await assertEqual(code?.isAlreadySeen, r.alreadySeen)
        }
    }

    func testEveryKindOfTheRegistryIsAnErrorKindCase() async throws {
        // ErrorKind is generated from the registry (ffi/uniffi/src/kind.rs); each code's kind
        // name is one of its cases.
        var names: [String] = []
        for n in errorCodes() where !names.contains(caseName(n.kind)) { names.append(caseName(n.kind)) }
        let (alice, bob) = try await establishedPair()
        let e = await expectError(104, .sessionNotFound) { _ = try await alice.encrypt(sessionId: "x", plaintext: bytes("x")) }
        XCTAssertTrue(names.contains(String(describing: e!.kind)))
        XCTAssertEqual(names.count, errorCodes().count - 3, "a kind spans 206/207/210 and 211/212")
        _ = bob
    }

    func testEachFamilyIsItsOwnCase() async throws {
        let (alice, bob) = try await establishedPair()
        var tampered = try await alice.encrypt(sessionId: "bob", plaintext: bytes("x"))
        tampered[tampered.count - 1] &+= 1
        let calls: [(String, () async throws -> Void)] = [
            ("Engine", { _ = try await alice.encrypt(sessionId: "nobody", plaintext: bytes("x")) }),
            ("Decrypt", { _ = try await bob.decrypt(sessionId: "alice", envelope: tampered) }),
            ("Decode", { _ = try await bob.decrypt(sessionId: "alice", envelope: Data([1])) }),
            ("Input", { _ = try await alice.encrypt(sessionId: "bob", plaintext: Data(count: 5 * 1024 * 1024)) }),
            ("System", { _ = try await Client.open(path: tempStore(), mode: .existing) }),
        ]
        for (family, call) in calls {
            do {
                try await call()
                XCTFail("\(family): nothing thrown")
            } catch let e as ProteusError {
                XCTAssertTrue(String(describing: e).hasPrefix(family + "("), "\(e)")
                XCTAssertEqual(e.errorCode?.family, family)
            }
        }
        // One catch for a whole family.
        do {
            _ = try await bob.decrypt(sessionId: "alice", envelope: Data([1]))
        } catch ProteusError.Decode(let code, _, _) {
            XCTAssertEqual(code / 100, 3)
        }
    }
}
