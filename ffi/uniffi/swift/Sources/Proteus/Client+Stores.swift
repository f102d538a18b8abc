// Hand-written companion of the generated bindings (Proteus.swift): the store operations as
// static methods of Client (UniFFI exports them as the functions clientSealStore, ...), and the
// batch callback as a closure.

import Foundation

extension Client {
    /// Encrypts the existing, unsealed SQLite store at `path` in place with `key` (32 bytes, from
    /// the Keychain: see the README), in one transaction; no plaintext record remains in the
    /// file. Clients on it must be closed.
    public static func sealStore(path: String, key: Data) async throws {
        try await clientSealStore(path: path, key: key)
    }

    /// Re-encrypts the sealed store at `path` from `oldKey` to `newKey` in one transaction (key
    /// rotation). A wrong `oldKey` throws `wrongStoreKey` (508) and changes nothing.
    public static func rekeyStore(path: String, oldKey: Data, newKey: Data) async throws {
        try await clientRekeyStore(path: path, oldKey: oldKey, newKey: newKey)
    }

    /// Deletes the store at `path` with its SQLite side files; nothing happens if there is none.
    /// A file that is not a Proteus store is refused (`storeCorrupt`, 503) and left alone.
    public static func deleteStore(path: String) async throws {
        try await clientDeleteStore(path: path)
    }

    /// `decryptBatch` with a closure: `onResults` gets each chunk of results and the progress,
    /// in queue order, **before** the batch is committed, and returns whether to go on. It runs
    /// on a worker thread of the library while the client is busy. Cancelling the Task stops
    /// the batch at its next chunk, before its commit (nothing of it is committed), and throws
    /// `CancellationError`. (UniFFI 0.32's Swift code does not pass a Task's cancellation on
    /// to the library; the closure's delivery does, for the one call where it matters.)
    public func decryptBatch(
        queue: [QueuedMessage],
        maxChunk: Int32 = 1000,
        progressIntervalMs: Int64 = 100,
        onResults: @escaping @Sendable ([BatchResult], BatchProgress) throws -> Bool
    ) async throws -> BatchSummary {
        let delivery = ClosureDelivery(onResults)
        return try await withTaskCancellationHandler {
            do {
                return try await decryptBatch(
                    queue: queue, delivery: delivery, maxChunk: maxChunk,
                    progressIntervalMs: progressIntervalMs)
            } catch let e as ProteusError where e.kind == .batchAborted && delivery.isCancelled {
                throw CancellationError()
            }
        } onCancel: {
            delivery.cancel()
        }
    }
}

/// A BatchDelivery made of a closure, which also stops the batch once its Task is cancelled.
private final class ClosureDelivery: BatchDelivery, @unchecked Sendable {
    private let onResults: @Sendable ([BatchResult], BatchProgress) throws -> Bool
    private let lock = NSLock()
    private var cancelled = false

    init(_ onResults: @escaping @Sendable ([BatchResult], BatchProgress) throws -> Bool) {
        self.onResults = onResults
    }

    var isCancelled: Bool {
        lock.lock(); defer { lock.unlock() }
        return cancelled
    }

    func cancel() {
        lock.lock(); cancelled = true; lock.unlock()
    }

    func deliver(results: [BatchResult], progress: BatchProgress) throws -> Bool {
        if isCancelled { return false }
        let goOn = try onResults(results, progress)
        return goOn && !isCancelled
    }
}
