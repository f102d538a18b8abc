import Foundation
import XCTest
@testable import Proteus

/// The Kotlin `BatchOverheadBench` in Swift, memory store only: 1000 queued CipherMessages of
/// 100-200 bytes on an established session, decrypted by one `decryptBatch` call, each run from a
/// fresh client in the same state (set up outside the timed part).
///
/// Skipped unless PROTEUS_BENCH_OUT names a file, where it writes one JSON line (the median of
/// PROTEUS_BENCH_RUNS runs after PROTEUS_BENCH_WARMUP, in milliseconds). Run by hand in the
/// chroot, e.g. `swift test -c release -Xswiftc -enable-testing --filter BatchOverheadBench`
/// (docs/benchmarks.md, "Session 19: UniFFI converters").
final class BatchOverheadBench: XCTestCase {
    /// Chat-like plaintexts of 100 to 200 bytes, as proteus-bench's `chat_plaintext`.
    private func chatPlaintext(_ i: Int) -> Data {
        let words = ["hey", "are", "we", "still", "on", "for", "lunch", "tomorrow", "I", "think", "the", "train"]
        let target = 100 + (i * 37) % 101
        var text = "#\(i): "
        var w = i
        while text.utf8.count < target {
            text += words[w % words.count] + " "
            w = (w * 7 + 3) % 1_000_003
        }
        return Data(text.utf8.prefix(target))
    }

    /// The app's side of a batch: it keeps every result.
    private final class Keep: BatchDelivery, @unchecked Sendable {
        var kept: [BatchResult] = []
        func deliver(results: [BatchResult], progress: BatchProgress) throws -> Bool {
            kept.append(contentsOf: results)
            return true
        }
    }

    func testDecrypt1000QueuedMessagesWithOneBatchCall() async throws {
        let env = ProcessInfo.processInfo.environment
        guard let outPath = env["PROTEUS_BENCH_OUT"], !outPath.isEmpty else {
            throw XCTSkip("set PROTEUS_BENCH_OUT to run the benchmark")
        }
        let warmup = Int(env["PROTEUS_BENCH_WARMUP"] ?? "") ?? 200
        let runs = Int(env["PROTEUS_BENCH_RUNS"] ?? "") ?? 61
        let (alice, bob) = try await establishedPair()
        let plaintexts = (0..<1000).map(chatPlaintext)
        var queue: [QueuedMessage] = []
        for p in plaintexts {
            queue.append(QueuedMessage(sessionId: "alice", envelope: try await alice.encrypt(sessionId: "bob", plaintext: p)))
        }
        let identity = try await bob.exportIdentity()
        let session = try await bob.exportSession(sessionId: "alice")
        var times: [Double] = []
        for run in 0..<(warmup + runs) {
            let client = try await Client.inMemory()
            try await client.importIdentity(identity: identity)
            try await client.importSession(sessionId: "alice", session: session)
            let keep = Keep()
            let start = DispatchTime.now().uptimeNanoseconds
            let summary = try await client.decryptBatch(queue: queue, delivery: keep, maxChunk: 1000, progressIntervalMs: 100)
            let ms = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
            try await client.close()
            XCTAssertEqual(summary.decrypted, 1000)
            if run >= warmup || run % 100 == 0 {
                XCTAssertEqual(keep.kept.map { $0.plaintext }, plaintexts)
            }
            if run >= warmup { times.append(ms) }
        }
        times.sort()
        let line = String(format: "{\"scenario\":\"1x1000est\",\"store\":\"memory\",\"binding\":\"swift\",\"median_ms\":%.3f,\"min_ms\":%.3f,\"max_ms\":%.3f,\"runs\":%d}",
                          times[times.count / 2], times[0], times[times.count - 1], times.count)
        print(line)
        try (line + "\n").write(toFile: outPath, atomically: true, encoding: .utf8)
    }
}
