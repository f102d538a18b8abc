import Foundation
import XCTest
@testable import Proteus

func bytes(_ s: String) -> Data { Data(s.utf8) }
func text(_ d: Data?) -> String? { d.map { String(decoding: $0, as: UTF8.self) } }

func hexData(_ s: String) -> Data {
    var data = Data()
    var i = s.startIndex
    while i < s.endIndex, let j = s.index(i, offsetBy: 2, limitedBy: s.endIndex) {
        data.append(UInt8(s[i..<j], radix: 16)!)
        i = j
    }
    return data
}

func hexString(_ d: Data) -> String { d.map { String(format: "%02x", $0) }.joined() }

/// An identity key pair serialised as Wire's Proteus does (CBOR: version, secret = seed and
/// public key, public key), from an Ed25519 seed and its public key.
func identityBlob(seed: String, publicKey: String) -> Data {
    hexData("a3" + "0001" + "01a1005840" + seed + publicKey + "02a100a1005820" + publicKey)
}

/// Alice with a session "bob" to Bob (from one of his one-time prekeys); nothing sent yet.
func pair() throws -> (Client, Client) {
    let alice = try Client.inMemory()
    let bob = try Client.inMemory()
    let bundle = try bob.generatePrekeys(count: 1)[0]
    try alice.createSession(sessionId: "bob", bundle: bundle.bytes)
    return (alice, bob)
}

/// A pair whose session is established both ways ("bob" at Alice's, "alice" at Bob's).
func establishedPair() throws -> (Client, Client) {
    let (alice, bob) = try pair()
    XCTAssertEqual(text(try bob.decrypt(sessionId: "alice", envelope: try alice.encrypt(sessionId: "bob", plaintext: bytes("hello")))), "hello")
    XCTAssertEqual(text(try alice.decrypt(sessionId: "bob", envelope: try bob.encrypt(sessionId: "alice", plaintext: bytes("hi")))), "hi")
    return (alice, bob)
}

func queueFrom(_ alice: Client, _ n: Int, _ prefix: String = "message") throws -> [QueuedMessage] {
    try (0..<n).map { QueuedMessage(sessionId: "alice", envelope: try alice.encrypt(sessionId: "bob", plaintext: bytes("\(prefix) \($0)"))) }
}

/// Asserts that `body` throws a ProteusError with this code and kind.
@discardableResult
func expectError(_ code: Int32, _ kind: String, file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> Void) -> ProteusError? {
    do {
        try body()
        XCTFail("expected \(kind) (\(code)), nothing was thrown", file: file, line: line)
    } catch let e as ProteusError {
        XCTAssertEqual(e.code, code, "\(e.kind): \(e.detail)", file: file, line: line)
        XCTAssertEqual(e.kind, kind, e.detail, file: file, line: line)
        return e
    } catch {
        XCTFail("expected a ProteusError, got \(error)", file: file, line: line)
    }
    return nil
}

/// Records every chunk and its progress; `onChunk` decides whether to go on.
final class Collector: BatchDelivery, @unchecked Sendable {
    private let lock = NSLock()
    private var _results: [BatchResult] = []
    private var _progress: [BatchProgress] = []
    private let onChunk: ([BatchResult], BatchProgress) throws -> Bool

    init(_ onChunk: @escaping ([BatchResult], BatchProgress) throws -> Bool = { _, _ in true }) {
        self.onChunk = onChunk
    }

    var results: [BatchResult] { lock.lock(); defer { lock.unlock() }; return _results }
    var progress: [BatchProgress] { lock.lock(); defer { lock.unlock() }; return _progress }

    func deliver(results: [BatchResult], progress: BatchProgress) throws -> Bool {
        let goOn = try onChunk(results, progress)
        lock.lock(); defer { lock.unlock() }
        _results.append(contentsOf: results)
        _progress.append(progress)
        return goOn
    }
}

func tempStore() -> String {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("proteus-swift-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    return dir.appendingPathComponent("store.db").path
}
