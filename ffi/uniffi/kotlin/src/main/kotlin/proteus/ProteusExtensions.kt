// Hand-written companion of the generated bindings (proteus.kt): what Kotlin callers expect
// and UniFFI cannot generate. Conversions only; nothing here touches the protocol.
package proteus

/** The stable numeric code, the same in Rust, Kotlin, Swift and JavaScript. */
val ProteusException.code: Int
    get() = when (this) {
        is ProteusException.Engine -> code
        is ProteusException.Decrypt -> code
        is ProteusException.Decode -> code
        is ProteusException.Input -> code
        is ProteusException.System -> code
    }

/** The stable name of the condition, such as [ErrorKind.DUPLICATE_MESSAGE]. */
val ProteusException.kind: ErrorKind
    get() = when (this) {
        is ProteusException.Engine -> kind
        is ProteusException.Decrypt -> kind
        is ProteusException.Decode -> kind
        is ProteusException.Input -> kind
        is ProteusException.System -> kind
    }

/** What happened, for logs (never key material or user data). */
val ProteusException.detail: String
    get() = when (this) {
        is ProteusException.Engine -> detail
        is ProteusException.Decrypt -> detail
        is ProteusException.Decode -> detail
        is ProteusException.Input -> detail
        is ProteusException.System -> detail
    }

/** The registered code of this error ([ProteusErrorCode]); null only for a code newer than these constants. */
val ProteusException.errorCode: ProteusErrorCode?
    get() = ProteusErrorCode.fromCode(code)

/**
 * [Client.decryptBatch] with a lambda: [onResults] gets each chunk of results and the progress,
 * in queue order, **before** the batch is committed, and returns whether to go on. It runs on a
 * worker thread of the library while the client is busy: store the plaintexts there (keyed by
 * message id); calling this client from it fails with ClientBusy (120). Cancelling the
 * coroutine stops the batch before its commit: nothing of it is committed.
 */
suspend fun Client.decryptBatch(
    queue: List<QueuedMessage>,
    maxChunk: Int = 1000,
    progressIntervalMs: Long = 100,
    onResults: (results: List<BatchResult>, progress: BatchProgress) -> Boolean,
): BatchSummary = decryptBatch(
    queue,
    object : BatchDelivery {
        override fun deliver(results: List<BatchResult>, progress: BatchProgress): Boolean =
            onResults(results, progress)
    },
    maxChunk,
    progressIntervalMs,
)

/**
 * Encrypts the existing, unsealed SQLite store at [path] in place with [key] (32 bytes, from
 * the Android Keystore: see the README), in one transaction; no plaintext record remains in the
 * file. Clients on it must be closed.
 */
suspend fun Client.Companion.sealStore(path: String, key: ByteArray) = clientSealStore(path, key)

/**
 * Re-encrypts the sealed store at [path] from [oldKey] to [newKey] in one transaction (key
 * rotation). A wrong [oldKey] gives WrongStoreKey (508) and changes nothing.
 */
suspend fun Client.Companion.rekeyStore(path: String, oldKey: ByteArray, newKey: ByteArray) =
    clientRekeyStore(path, oldKey, newKey)

/**
 * Deletes the store at [path] with its SQLite side files; nothing happens if there is none. A
 * file that is not a Proteus store is refused (StoreCorrupt, 503) and left alone.
 */
suspend fun Client.Companion.deleteStore(path: String) = clientDeleteStore(path)
