import Foundation
import XCTest
@testable import Proteus

func bytes(_ s: String) -> Data { Data(s.utf8) }
func text(_ d: Data?) -> String? { d.map { String(decoding: $0, as: UTF8.self) } }

extension BatchSummary {
    /// Total, decrypted, already seen, key evicted, failed.
    var counts: [Int32] { [total, decrypted, alreadySeen, keyEvicted, failed] }
}

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
func pair(wait: Int64 = 30_000) async throws -> (Client, Client) {
    let alice = try await Client.inMemory()
    let bob = try await Client.inMemory(options: ClientOptions(waitTimeoutMs: wait))
    let bundle = try await bob.generatePrekeys(count: 1)[0]
    try await alice.createSession(sessionId: "bob", bundle: bundle.bytes)
    return (alice, bob)
}

/// A pair whose session is established both ways ("bob" at Alice's, "alice" at Bob's).
func establishedPair() async throws -> (Client, Client) {
    let (alice, bob) = try await pair()
    let hello = try await bob.decrypt(sessionId: "alice", envelope: try await alice.encrypt(sessionId: "bob", plaintext: bytes("hello")))
    XCTAssertEqual(text(hello), "hello")
    let hi = try await alice.decrypt(sessionId: "bob", envelope: try await bob.encrypt(sessionId: "alice", plaintext: bytes("hi")))
    XCTAssertEqual(text(hi), "hi")
    return (alice, bob)
}

/// `n` envelopes from `alice` to her session "bob", the plaintext of each made by `message`.
func encryptMany(_ alice: Client, _ n: Int, _ message: (Int) -> String) async throws -> [Data] {
    var out: [Data] = []
    for i in 0..<n {
        out.append(try await alice.encrypt(sessionId: "bob", plaintext: bytes(message(i))))
    }
    return out
}

func queueFrom(_ alice: Client, _ n: Int, _ prefix: String = "message") async throws -> [QueuedMessage] {
    try await encryptMany(alice, n) { "\(prefix) \($0)" }.map { QueuedMessage(sessionId: "alice", envelope: $0) }
}

/// Runs an async call from synchronous code (a batch callback) and waits for it.
func blocking<T>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let done = DispatchSemaphore(value: 0)
    let box = ResultBox<T>()
    Task {
        do { box.result = .success(try await body()) } catch { box.result = .failure(error) }
        done.signal()
    }
    done.wait()
    return try box.result!.get()
}

private final class ResultBox<T>: @unchecked Sendable {
    var result: Result<T, Error>?
}

/// Asserts that `body` throws a ProteusError with this code and kind.
@discardableResult
func expectError(_ code: Int32, _ kind: ErrorKind, file: StaticString = #filePath, line: UInt = #line, _ body: () async throws -> Void) async -> ProteusError? {
    do {
        try await body()
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

// XCTest's assertions take synchronous autoclosures; these take async ones, so that a test can
// write `await assertEqual(try await client.fingerprint(), expected)`.

private func evaluate<T>(_ e: () async throws -> T, _ file: StaticString, _ line: UInt) async -> T? {
    do { return try await e() } catch {
        XCTFail("threw \(error)", file: file, line: line)
        return nil
    }
}

func assertEqual<T: Equatable>(_ a: @autoclosure () async throws -> T, _ b: @autoclosure () async throws -> T, _ message: @autoclosure () -> String = "", file: StaticString = #filePath, line: UInt = #line) async {
    guard let x = await evaluate(a, file, line), let y = await evaluate(b, file, line) else { return }
    XCTAssertEqual(x, y, message(), file: file, line: line)
}

func assertNotEqual<T: Equatable>(_ a: @autoclosure () async throws -> T, _ b: @autoclosure () async throws -> T, _ message: @autoclosure () -> String = "", file: StaticString = #filePath, line: UInt = #line) async {
    guard let x = await evaluate(a, file, line), let y = await evaluate(b, file, line) else { return }
    XCTAssertNotEqual(x, y, message(), file: file, line: line)
}

func assertTrue(_ a: @autoclosure () async throws -> Bool, _ message: @autoclosure () -> String = "", file: StaticString = #filePath, line: UInt = #line) async {
    guard let x = await evaluate(a, file, line) else { return }
    XCTAssertTrue(x, message(), file: file, line: line)
}

func assertFalse(_ a: @autoclosure () async throws -> Bool, _ message: @autoclosure () -> String = "", file: StaticString = #filePath, line: UInt = #line) async {
    guard let x = await evaluate(a, file, line) else { return }
    XCTAssertFalse(x, message(), file: file, line: line)
}

func assertNil<T>(_ a: @autoclosure () async throws -> T?, _ message: @autoclosure () -> String = "", file: StaticString = #filePath, line: UInt = #line) async {
    guard let x = await evaluate(a, file, line) else { return }
    XCTAssertNil(x, message(), file: file, line: line)
}

func assertNotNil<T>(_ a: @autoclosure () async throws -> T?, _ message: @autoclosure () -> String = "", file: StaticString = #filePath, line: UInt = #line) async {
    guard let x = await evaluate(a, file, line) else { return }
    XCTAssertNotNil(x, message(), file: file, line: line)
}

func assertGreaterThanOrEqual<T: Comparable>(_ a: @autoclosure () async throws -> T, _ b: @autoclosure () async throws -> T, _ message: @autoclosure () -> String = "", file: StaticString = #filePath, line: UInt = #line) async {
    guard let x = await evaluate(a, file, line), let y = await evaluate(b, file, line) else { return }
    XCTAssertGreaterThanOrEqual(x, y, message(), file: file, line: line)
}

func assertLessThan<T: Comparable>(_ a: @autoclosure () async throws -> T, _ b: @autoclosure () async throws -> T, _ message: @autoclosure () -> String = "", file: StaticString = #filePath, line: UInt = #line) async {
    guard let x = await evaluate(a, file, line), let y = await evaluate(b, file, line) else { return }
    XCTAssertLessThan(x, y, message(), file: file, line: line)
}

/// Asserts that `body` throws anything.
func assertThrows(_ body: () async throws -> Void, file: StaticString = #filePath, line: UInt = #line) async {
    do {
        try await body()
        XCTFail("nothing was thrown", file: file, line: line)
    } catch {}
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
