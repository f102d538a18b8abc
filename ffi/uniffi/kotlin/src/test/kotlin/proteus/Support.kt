package proteus

import java.nio.file.Files
import java.nio.file.Path
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith

fun bytes(s: String): ByteArray = s.toByteArray(Charsets.UTF_8)

fun text(b: ByteArray?): String? = b?.toString(Charsets.UTF_8)

/** A batch's counts: total, decrypted, already seen, key evicted, failed. */
fun BatchSummary.counts(): List<Int> = listOf(total, decrypted, alreadySeen, keyEvicted, failed)

/** Alice with a session "bob" to Bob (from one of his one-time prekeys); nothing sent yet. */
suspend fun pair(): Pair<Client, Client> {
    val alice = Client.inMemory()
    val bob = Client.inMemory()
    val bundle = bob.generatePrekeys(1).single()
    alice.createSession("bob", bundle.bytes)
    return alice to bob
}

/** A pair whose session is established both ways ("bob" at Alice's, "alice" at Bob's). */
suspend fun establishedPair(): Pair<Client, Client> {
    val (alice, bob) = pair()
    assertEquals("hello", text(bob.decrypt("alice", alice.encrypt("bob", bytes("hello")))))
    assertEquals("hi", text(alice.decrypt("bob", bob.encrypt("alice", bytes("hi")))))
    return alice to bob
}

/** `n` messages from Alice, queued for Bob. */
suspend fun queueFrom(alice: Client, n: Int, prefix: String = "message"): List<QueuedMessage> =
    (0 until n).map { QueuedMessage("alice", alice.encrypt("bob", bytes("$prefix $it"))) }

/** Asserts that [block] throws a ProteusException with this code and kind. */
inline fun expectError(code: Int, kind: ErrorKind, block: () -> Unit): ProteusException {
    val e = assertFailsWith<ProteusException> { block() }
    assertEquals(code to kind, e.code to e.kind, "unexpected error: ${e.message}")
    return e
}

/** Records every chunk and its progress; [onChunk] decides whether to go on. */
class Collector(private val onChunk: (List<BatchResult>, BatchProgress) -> Boolean = { _, _ -> true }) :
    BatchDelivery {
    val results = java.util.Collections.synchronizedList(mutableListOf<BatchResult>())
    val progress = java.util.Collections.synchronizedList(mutableListOf<BatchProgress>())

    override fun deliver(results: List<BatchResult>, progress: BatchProgress): Boolean {
        val goOn = onChunk(results, progress)
        this.results.addAll(results)
        this.progress.add(progress)
        return goOn
    }
}

fun tempStore(): Path = Files.createTempDirectory("proteus-kotlin-").resolve("store.db")
