import Foundation
import Proteus

final class Collect: @unchecked Sendable {
    private let lock = NSLock()
    private var _results: [BatchResult] = []
    func add(_ r: [BatchResult]) { lock.lock(); _results += r; lock.unlock() }
    var results: [BatchResult] { lock.lock(); defer { lock.unlock() }; return _results }
}

let alice = try await Client.inMemory()
let bob = try await Client.inMemory()
try await alice.createSession(sessionId: "bob", bundle: try await bob.generatePrekeys(count: 1)[0].bytes)
let fanout = try await alice.encryptFor(sessionIds: ["bob"], plaintext: Data("hello from a consumer".utf8))
let collect = Collect()
let aliceFingerprint = try await alice.fingerprint()
_ = try await bob.decryptBatch(queue: [QueuedMessage(sessionId: "alice", envelope: fanout[0].envelope!)]) { results, _ in
    collect.add(results)
    return true
}
guard let plaintext = collect.results.first?.plaintext,
      String(decoding: plaintext, as: UTF8.self) == "hello from a consumer",
      collect.results.first?.sender == aliceFingerprint
else {
    print("consumer FAILED: \(collect.results)")
    exit(1)
}
try await alice.close()
try await bob.close()
print("consumer ok")
