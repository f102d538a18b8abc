package proteus

import kotlinx.coroutines.test.runTest
import java.util.concurrent.CountDownLatch
import java.util.concurrent.Executors
import java.util.concurrent.TimeUnit
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Timeout
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertTrue

/**
 * One client used from 8 threads at once: no corruption, no deadlock, nothing blocks forever.
 * The time limits are bounds against a hang, generous enough for a busy machine (hundreds of
 * synced SQLite commits on a shared disk), never a measure of speed.
 */
@Timeout(value = 600, unit = TimeUnit.SECONDS)
class ConcurrencyTest {
    private val threads = 8

    /** Runs [body] on [threads] threads started together; rethrows the first failure. */
    private fun <T> onThreads(body: suspend (Int) -> T): List<T> {
        val pool = Executors.newFixedThreadPool(threads)
        try {
            val start = CountDownLatch(1)
            val futures = (0 until threads).map { t -> pool.submit<T> { start.await(); runBlocking { body(t) } } }
            start.countDown()
            return futures.map { it.get(540, TimeUnit.SECONDS) }
        } finally {
            pool.shutdownNow()
        }
    }

    @Test
    fun `8 threads encrypt on one session and every message decrypts exactly once`() = runTest {
        val (alice, bob) = establishedPair()
        val envelopes = onThreads { t -> (0 until 100).map { i -> alice.encrypt("bob", bytes("$t/$i")) } }.flatten()
        val collector = Collector()
        val summary = bob.decryptBatch(envelopes.shuffled().map { QueuedMessage("alice", it) }, collector)
        assertEquals(800, summary.decrypted)
        val texts = collector.results.map { text(it.plaintext)!! }.toSet()
        assertEquals((0 until threads).flatMap { t -> (0 until 100).map { "$t/$it" } }.toSet(), texts)
    }

    @Test
    fun `8 threads share a SQLite client, each with its own peer, reading and writing`() = runTest {
        val path = tempStore().toString()
        val peers = (0 until threads).map { Client.inMemory() }
        Client.open(path).use { alice ->
            peers.forEachIndexed { t, peer -> alice.createSession("peer:$t", peer.generatePrekeys(1).single().bytes) }
            val fingerprint = alice.fingerprint()
            onThreads { t ->
                val peer = peers[t]
                repeat(50) { i ->
                    val envelope = alice.encrypt("peer:$t", bytes("to $t #$i"))
                    assertEquals("to $t #$i", text(peer.decrypt("alice", envelope)))
                    val reply = peer.encrypt("alice", bytes("from $t #$i"))
                    assertEquals("from $t #$i", text(alice.decrypt("peer:$t", reply)))
                    assertEquals(fingerprint, alice.fingerprint())
                    assertTrue(alice.hasSession("peer:$t"))
                    assertEquals(threads, alice.sessionIds().size)
                }
            }
        }
        // Everything was committed consistently: the conversations go on after reopening.
        Client.open(path).use { alice ->
            peers.forEachIndexed { t, peer ->
                assertEquals("after $t", text(peer.decrypt("alice", alice.encrypt("peer:$t", bytes("after $t")))))
            }
        }
    }

    @Test
    fun `batches on one thread, single calls on seven others`() = runTest {
        val bob = Client.inMemory()
        val senders = (0 until threads).map { Client.inMemory() }
        senders.forEach { it.createSession("bob", bob.generatePrekeys(1).single().bytes) }
        val queues = senders.mapIndexed { t, s ->
            (0 until 200).map { i -> QueuedMessage("sender:$t", s.encrypt("bob", bytes("$t:$i"))) }
        }
        val results = onThreads { t ->
            if (t == 0) {
                // Thread 0 decrypts sender 0's queue in batches of 50 messages.
                queues[0].chunked(50).sumOf { bob.decryptBatch(it, Collector(), maxChunk = 10).decrypted.toInt() }
            } else {
                queues[t].count { text(bob.decrypt(it.sessionId, it.envelope)) != null }
            }
        }
        assertEquals(List(threads) { 200 }, results)
        assertEquals(threads, bob.sessionIds().size)
    }

    @Test
    fun `coroutines on Dispatchers IO share a client`() = runTest {
        val (alice, bob) = establishedPair()
        val envelopes = (0 until threads).map { t ->
            async(Dispatchers.IO) { (0 until 50).map { alice.encrypt("bob", bytes("c$t/$it")) } }
        }.awaitAll().flatten()
        val decrypted = envelopes.chunked(100).map { chunk ->
            async(Dispatchers.IO) { bob.decryptBatch(chunk.map { QueuedMessage("alice", it) }, Collector()) }
        }.awaitAll()
        assertEquals(400, decrypted.sumOf { it.decrypted })
    }

    @Test
    fun `a callback waiting for another thread that uses the client gets ClientBusy, not a deadlock`() = runTest {
        val alice = Client.inMemory()
        val bob = Client.inMemory(ClientOptions(waitTimeoutMs = 200))
        alice.createSession("bob", bob.generatePrekeys(1).single().bytes)
        val pool = Executors.newSingleThreadExecutor()
        var seen: Throwable? = null
        bob.decryptBatch(queueFrom(alice, 1), Collector { _, _ ->
            // The other thread waits for this batch, which waits for it: after 200 ms it gives up.
            // The bound only keeps a deadlock from hanging the test.
            seen = runCatching { pool.submit<List<String>> { runBlocking { bob.sessionIds() } }.get(120, TimeUnit.SECONDS) }
                .exceptionOrNull()?.cause
            true
        })
        pool.shutdown()
        val e = seen as ProteusException
        assertEquals(120 to ErrorKind.CLIENT_BUSY, e.code to e.kind)
        // It gave up after the client's wait timeout (the default is 30 s), however long that took.
        assertTrue(e.message!!.contains("within 200 ms"), e.message)
        assertEquals(listOf("alice"), bob.sessionIds())
    }

    @Test
    fun `close while other threads are calling is safe`() = runTest {
        val (alice, _) = establishedPair()
        val results = onThreads { t ->
            runCatching {
                repeat(200) { alice.encrypt("bob", bytes("x")) }
                if (t == 0) alice.close()
            }.exceptionOrNull()
        }
        // Calls after close fail with IllegalStateException; none crashes or hangs.
        assertTrue(results.all { it == null || it is IllegalStateException }, results.toString())
    }
}
