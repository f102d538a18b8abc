import Foundation
import Proteus

final class Collect: BatchDelivery, @unchecked Sendable {
    var results: [BatchResult] = []
    func deliver(results: [BatchResult], progress: BatchProgress) throws -> Bool {
        self.results += results
        return true
    }
}

let alice = try Client.inMemory()
let bob = try Client.inMemory()
try alice.createSession(sessionId: "bob", bundle: try bob.generatePrekeys(count: 1)[0].bytes)
let envelope = try alice.encrypt(sessionId: "bob", plaintext: Data("hello from a consumer".utf8))
let collect = Collect()
let aliceFingerprint = try alice.fingerprint()
_ = try bob.decryptBatch(queue: [QueuedMessage(sessionId: "alice", envelope: envelope)], delivery: collect)
guard let plaintext = collect.results.first?.plaintext,
      String(decoding: plaintext, as: UTF8.self) == "hello from a consumer",
      collect.results.first?.sender == aliceFingerprint
else {
    print("consumer FAILED: \(collect.results)")
    exit(1)
}
print("consumer ok")
