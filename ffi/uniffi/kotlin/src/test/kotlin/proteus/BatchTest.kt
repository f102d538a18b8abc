package proteus

import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.test.runTest
import kotlin.test.Test
import kotlin.test.assertContentEquals
import kotlin.test.assertEquals
import kotlin.test.assertNull
import kotlin.test.assertTrue

class BatchTest {
    @Test
    fun `1000 queued messages with progress, delivered before the commit`() = runTest {
        val (alice, bob) = pair()
        val queue = queueFrom(alice, 1000)
        val collector = Collector()
        val summary = bob.decryptBatch(queue, collector, maxChunk = 100, progressIntervalMs = 0)
        assertEquals(listOf(1000, 1000, 0, 0, 0), summary.counts())
        assertTrue(summary.decryptMs > 0.0 && summary.deliveryMs >= 0.0 && summary.commitMs >= 0.0)
        // Chunks of 100: ten deliveries, progress rising to 1000/1000.
        assertEquals((1..10).map { BatchProgress((it * 100), 1000) }, collector.progress)
        assertEquals(1000, collector.results.size)
        collector.results.forEachIndexed { i, r ->
            assertEquals("message $i", text(r.plaintext))
            assertEquals("alice", r.sessionId)
            assertEquals(messageId(queue[i].envelope), r.messageId)
            assertNull(r.errorCode)
        }
        // Delivered again after the commit: all already seen, no plaintext.
        val again = Collector()
        assertEquals(listOf(1000, 0, 1000, 0, 0), bob.decryptBatch(queue, again, progressIntervalMs = 0).counts())
        assertTrue(again.results.all { it.alreadySeen && it.plaintext == null && it.errorCode == 209 })
        assertEquals(listOf(BatchProgress(1000, 1000)), again.progress)
    }

    @Test
    fun `max chunk 1 delivers every message on its own`() = runTest {
        val (alice, bob) = pair()
        val collector = Collector { results, _ -> results.size == 1 }
        bob.decryptBatch(queueFrom(alice, 20), collector, maxChunk = 1)
        assertEquals((1..20).map { it }, collector.progress.map { it.done })
    }

    @Test
    fun `a mixed queue gives one result per message`() = runTest {
        val (alice, bob) = establishedPair()
        val carol = Client.inMemory()
        carol.createSession("bob", bob.generatePrekeys(1).single().bytes)
        val good = alice.encrypt("bob", bytes("from alice"))
        val tampered = alice.encrypt("bob", bytes("tampered")).also { it[it.size - 1] = (it[it.size - 1] + 1).toByte() }
        val queue = listOf(
            QueuedMessage("alice", good),
            QueuedMessage("alice", byteArrayOf(1, 2, 3)),
            QueuedMessage("carol", carol.encrypt("bob", bytes("from carol"))),
            QueuedMessage("alice", tampered),
            QueuedMessage("alice", good),
            QueuedMessage("", good),
        )
        val collector = Collector()
        val summary = bob.decryptBatch(queue, collector)
        assertEquals(listOf(6, 2, 1, 0, 3), summary.counts())
        // The failures by code: the undecodable envelope's (3xx), 206 and 106.
        assertEquals(3, summary.failedByCode.size)
        assertEquals(1 to 1, summary.failedByCode[206] to summary.failedByCode[106])
        val r = collector.results
        assertEquals("from alice", text(r[0].plaintext))
        assertEquals(3, r[1].errorCode!! / 100)
        assertEquals("from carol", text(r[2].plaintext))
        // Carol's first message names her; Alice's (a session already answered) names no one.
        assertEquals(carol.fingerprint(), r[2].sender)
        assertNull(r[0].sender)
        assertEquals(206 to ErrorKind.INVALID_SIGNATURE, r[3].errorCode to r[3].errorKind)
        assertEquals(209 to ErrorKind.DUPLICATE_MESSAGE, r[4].errorCode to r[4].errorKind)
        assertTrue(r[4].alreadySeen)
        assertEquals(106 to ErrorKind.INVALID_SESSION_ID, r[5].errorCode to r[5].errorKind)
        assertEquals(setOf("alice", "carol"), bob.sessionIds().toSet())
        // The session made inside the batch was committed with it.
        assertEquals("to carol", text(carol.decrypt("bob", bob.encrypt("carol", bytes("to carol")))))
    }

    @Test
    fun `returning false stops the batch and commits nothing`() = runTest {
        val (alice, bob) = pair()
        val queue = queueFrom(alice, 300)
        val collector = Collector { _, progress -> progress.done < 200 }
        expectError(108, ErrorKind.BATCH_ABORTED) { bob.decryptBatch(queue, collector, 100, 0) }
        assertEquals(listOf(100, 200), collector.progress.map { it.done })
        // Nothing was committed: no session, the prekey is still there, and all 300 decrypt.
        assertEquals(false, bob.hasSession("alice"))
        assertEquals(1, bob.prekeysRemaining())
        assertEquals(300, bob.decryptBatch(queue, Collector()).decrypted)
    }

    @Test
    fun `a throwing callback stops the batch with CallbackFailed`() = runTest {
        val (alice, bob) = pair()
        val queue = queueFrom(alice, 10)
        val e = expectError(121, ErrorKind.CALLBACK_FAILED) {
            bob.decryptBatch(queue, Collector { _, _ -> throw IllegalStateException("app database full") })
        }
        assertTrue(e.message!!.contains("app database full"), e.message)
        assertEquals(10, bob.decryptBatch(queue, Collector()).decrypted)
    }

    @Test
    fun `calling the client from its own callback fails with ClientBusy instead of deadlocking`() = runTest {
        val (alice, bob) = pair()
        var inner: ProteusException? = null
        val collector = Collector { _, _ ->
            inner = runCatching { runBlocking { bob.encrypt("alice", bytes("re-entrant")) } }.exceptionOrNull() as ProteusException?
            true
        }
        assertEquals(5, bob.decryptBatch(queueFrom(alice, 5), collector).decrypted)
        assertEquals(120 to ErrorKind.CLIENT_BUSY, inner?.code to inner?.kind)
        // A ProteusException thrown out of the callback is what decryptBatch throws.
        val queue = queueFrom(alice, 5, "second")
        expectError(120, ErrorKind.CLIENT_BUSY) {
            bob.decryptBatch(queue, Collector { _, _ -> runBlocking { bob.fingerprint() }; true })
        }
        assertEquals(5, bob.decryptBatch(queue, Collector()).decrypted)
    }

    @Test
    fun `by default progress comes at a steady rate and at the end`() = runTest {
        val (alice, bob) = pair()
        val collector = Collector()
        // Deliveries every 1000 results or every 100 ms, whichever comes first, and at the end.
        bob.decryptBatch(queueFrom(alice, 2500), collector)
        val done = collector.progress.map { it.done }
        assertTrue(done.size >= 3, "$done")
        assertEquals(done.sorted(), done)
        assertTrue(done.zipWithNext().all { (a, b) -> b - a <= 1000 }, "$done")
        assertEquals(BatchProgress(2500, 2500), collector.progress.last())
        assertEquals(2500, collector.results.size)
    }

    @Test
    fun `an empty queue delivers nothing`() = runTest {
        val bob = Client.inMemory()
        val collector = Collector()
        assertEquals(listOf(0, 0, 0, 0, 0), bob.decryptBatch(emptyList(), collector).counts())
        assertTrue(collector.progress.isEmpty())
    }

    @Test
    fun `results are plain values`() = runTest {
        val (alice, bob) = pair()
        val envelope = alice.encrypt("bob", bytes("value"))
        val collector = Collector()
        bob.decryptBatch(listOf(QueuedMessage("alice", envelope)), collector)
        val r = collector.results.single()
        assertContentEquals(bytes("value"), r.plaintext)
        assertEquals(64, r.messageId.length)
    }
}
