package proteus

import kotlin.test.Test
import kotlin.test.assertContentEquals
import kotlin.test.assertEquals
import kotlin.test.assertNull
import kotlin.test.assertTrue

class BatchTest {
    @Test
    fun `1000 queued messages with progress, delivered before the commit`() {
        val (alice, bob) = pair()
        val queue = queueFrom(alice, 1000)
        val collector = Collector()
        val summary = bob.decryptBatch(queue, collector, maxChunk = 100u, progressIntervalMs = 0u)
        assertEquals(BatchSummary(1000u, 1000u, 0u, 0u), summary)
        // Chunks of 100: ten deliveries, progress rising to 1000/1000.
        assertEquals((1..10).map { BatchProgress((it * 100).toUInt(), 1000u) }, collector.progress)
        assertEquals(1000, collector.results.size)
        collector.results.forEachIndexed { i, r ->
            assertEquals("message $i", text(r.plaintext))
            assertEquals("alice", r.sessionId)
            assertEquals(messageId(queue[i].envelope), r.messageId)
            assertNull(r.errorCode)
        }
        // Delivered again after the commit: all already seen, no plaintext.
        val again = Collector()
        assertEquals(BatchSummary(1000u, 0u, 1000u, 0u), bob.decryptBatch(queue, again, progressIntervalMs = 0u))
        assertTrue(again.results.all { it.alreadySeen && it.plaintext == null && it.errorCode == 209 })
        assertEquals(listOf(BatchProgress(1000u, 1000u)), again.progress)
    }

    @Test
    fun `max chunk 1 delivers every message on its own`() {
        val (alice, bob) = pair()
        val collector = Collector { results, _ -> results.size == 1 }
        bob.decryptBatch(queueFrom(alice, 20), collector, maxChunk = 1u)
        assertEquals((1..20).map { it.toUInt() }, collector.progress.map { it.done })
    }

    @Test
    fun `a mixed queue gives one result per message`() {
        val (alice, bob) = establishedPair()
        val carol = Client.inMemory()
        carol.createSession("bob", bob.generatePrekeys(1u).single().bytes)
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
        assertEquals(BatchSummary(6u, 2u, 1u, 3u), summary)
        val r = collector.results
        assertEquals("from alice", text(r[0].plaintext))
        assertEquals(3, r[1].errorCode!! / 100)
        assertEquals("from carol", text(r[2].plaintext))
        // Carol's first message names her; Alice's (a session already answered) names no one.
        assertEquals(carol.fingerprint(), r[2].sender)
        assertNull(r[0].sender)
        assertEquals(206 to "InvalidSignature", r[3].errorCode to r[3].errorKind)
        assertEquals(209 to "DuplicateMessage", r[4].errorCode to r[4].errorKind)
        assertTrue(r[4].alreadySeen)
        assertEquals(106 to "InvalidSessionId", r[5].errorCode to r[5].errorKind)
        assertEquals(setOf("alice", "carol"), bob.sessionIds().toSet())
        // The session made inside the batch was committed with it.
        assertEquals("to carol", text(carol.decrypt("bob", bob.encrypt("carol", bytes("to carol")))))
    }

    @Test
    fun `returning false stops the batch and commits nothing`() {
        val (alice, bob) = pair()
        val queue = queueFrom(alice, 300)
        val collector = Collector { _, progress -> progress.done < 200u }
        expectError(108, "BatchAborted") { bob.decryptBatch(queue, collector, 100u, 0u) }
        assertEquals(listOf(100u, 200u), collector.progress.map { it.done })
        // Nothing was committed: no session, the prekey is still there, and all 300 decrypt.
        assertEquals(false, bob.hasSession("alice"))
        assertEquals(1u, bob.prekeysRemaining())
        assertEquals(300u, bob.decryptBatch(queue, Collector()).decrypted)
    }

    @Test
    fun `a throwing callback stops the batch with CallbackFailed`() {
        val (alice, bob) = pair()
        val queue = queueFrom(alice, 10)
        val e = expectError(121, "CallbackFailed") {
            bob.decryptBatch(queue, Collector { _, _ -> throw IllegalStateException("app database full") })
        }
        assertTrue(e.message!!.contains("app database full"), e.message)
        assertEquals(10u, bob.decryptBatch(queue, Collector()).decrypted)
    }

    @Test
    fun `calling the client from its own callback fails with ClientBusy instead of deadlocking`() {
        val (alice, bob) = pair()
        var inner: ProteusException? = null
        val collector = Collector { _, _ ->
            inner = runCatching { bob.encrypt("alice", bytes("re-entrant")) }.exceptionOrNull() as ProteusException?
            true
        }
        assertEquals(5u, bob.decryptBatch(queueFrom(alice, 5), collector).decrypted)
        assertEquals(120 to "ClientBusy", inner?.code to inner?.kind)
        // A ProteusException thrown out of the callback is what decryptBatch throws.
        val queue = queueFrom(alice, 5, "second")
        expectError(120, "ClientBusy") {
            bob.decryptBatch(queue, Collector { _, _ -> bob.fingerprint(); true })
        }
        assertEquals(5u, bob.decryptBatch(queue, Collector()).decrypted)
    }

    @Test
    fun `by default progress comes at a steady rate and at the end`() {
        val (alice, bob) = pair()
        val collector = Collector()
        // Deliveries every 1000 results or every 100 ms, whichever comes first, and at the end.
        bob.decryptBatch(queueFrom(alice, 2500), collector)
        val done = collector.progress.map { it.done }
        assertTrue(done.size >= 3, "$done")
        assertEquals(done.sorted(), done)
        assertTrue(done.zipWithNext().all { (a, b) -> b - a <= 1000u }, "$done")
        assertEquals(BatchProgress(2500u, 2500u), collector.progress.last())
        assertEquals(2500, collector.results.size)
    }

    @Test
    fun `an empty queue delivers nothing`() {
        val bob = Client.inMemory()
        val collector = Collector()
        assertEquals(BatchSummary(0u, 0u, 0u, 0u), bob.decryptBatch(emptyList(), collector))
        assertTrue(collector.progress.isEmpty())
    }

    @Test
    fun `results are plain values`() {
        val (alice, bob) = pair()
        val envelope = alice.encrypt("bob", bytes("value"))
        val collector = Collector()
        bob.decryptBatch(listOf(QueuedMessage("alice", envelope)), collector)
        val r = collector.results.single()
        assertContentEquals(bytes("value"), r.plaintext)
        assertEquals(64, r.messageId.length)
    }
}
