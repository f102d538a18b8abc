package proteus

import java.util.concurrent.CountDownLatch
import java.util.concurrent.TimeUnit
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.ExperimentalCoroutinesApi
import kotlinx.coroutines.async
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.launch
import kotlinx.coroutines.newSingleThreadContext
import kotlinx.coroutines.test.runTest
import kotlinx.coroutines.withContext
import kotlinx.coroutines.withTimeout
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertFalse
import kotlin.test.assertNotEquals
import kotlin.test.assertTrue

/** Every call is a suspend fun that runs off the caller's thread, and can be cancelled. */
class AsyncTest {
    @Test
    fun `calls run on the library's workers, not on the caller's thread`() = runTest {
        val (alice, bob) = pair()
        val caller = Thread.currentThread()
        var deliveredOn: Thread? = null
        bob.decryptBatch(queueFrom(alice, 3)) { _, _ -> deliveredOn = Thread.currentThread(); true }
        assertTrue(deliveredOn != null)
        assertNotEquals(caller, deliveredOn)
    }

    @Test
    fun `the library's worker threads stay attached to the JVM from one call to the next`() = runTest {
        val (alice, bob) = establishedPair()
        val threads = mutableListOf<Thread>()
        repeat(8) {
            var deliveredOn: Thread? = null
            bob.decryptBatch(queueFrom(alice, 2)) { _, _ -> deliveredOn = Thread.currentThread(); true }
            // JNA's default detaches a native thread when its callback returns: its Thread ends.
            val thread = deliveredOn!!
            assertTrue(thread.isAlive, "the worker thread was detached after its callback")
            assertTrue(thread.isDaemon, "a worker thread is not a daemon")
            threads.add(thread)
        }
        // A worker idle for 10 s exits (ffi/uniffi/src/worker.rs), and JNA detaches it then: its
        // Thread ends rather than staying registered with the JVM.
        val deadline = System.nanoTime() + 30_000_000_000L
        while (threads.any { it.isAlive } && System.nanoTime() < deadline) {
            withContext(Dispatchers.IO) { Thread.sleep(200) }
        }
        assertFalse(threads.any { it.isAlive }, "a worker thread that exited is still attached")
        assertEquals(1, bob.decryptBatch(queueFrom(alice, 1)) { _, _ -> true }.decrypted)
    }

    @OptIn(ExperimentalCoroutinesApi::class, kotlinx.coroutines.DelicateCoroutinesApi::class)
    @Test
    fun `a batch leaves its caller's only thread free`() = runTest {
        val (alice, bob) = pair()
        val queue = queueFrom(alice, 500)
        // One thread, like an app's main thread: the batch's callback waits for a coroutine that
        // needs that same thread. If the batch ran on it, this would never finish.
        newSingleThreadContext("main").use { main ->
            withContext(main) {
                val other = CompletableDeferred<Unit>()
                val batch = async {
                    bob.decryptBatch(queue, maxChunk = 100) { _, _ ->
                        check(runCatching { kotlinx.coroutines.runBlocking { withTimeout(30_000) { other.await() } } }.isSuccess)
                        true
                    }
                }
                launch { other.complete(Unit) }
                assertEquals(500, batch.await().decrypted)
            }
        }
    }

    @Test
    fun `cancelling a coroutine in the middle of a batch commits nothing and the client goes on`() = runTest {
        val (alice, bob) = pair()
        val queue = queueFrom(alice, 3000)
        val firstChunk = CompletableDeferred<Unit>()
        val release = CountDownLatch(1)
        var chunks = 0
        val job = launch(Dispatchers.Default) {
            bob.decryptBatch(queue, maxChunk = 100, progressIntervalMs = 0) { _, _ ->
                chunks++
                firstChunk.complete(Unit)
                release.await(30, TimeUnit.SECONDS)
                true
            }
        }
        firstChunk.await()
        // Cancelled while the callback holds the first chunk (cancellation is asynchronous: the
        // coroutine has let go of the call once join returns); the batch stops before its commit.
        job.cancel()
        job.join()
        release.countDown()
        assertTrue(job.isCancelled)
        // Nothing was committed: no session, the prekey is still there...
        assertFalse(bob.hasSession("alice"))
        assertEquals(1, bob.prekeysRemaining())
        assertEquals(1, chunks, "the batch stopped at its next chunk")
        // ...and the client decrypts the whole queue afterwards.
        assertEquals(3000, bob.decryptBatch(queue) { _, _ -> true }.decrypted)
        assertTrue(bob.hasSession("alice"))
    }

    @Test
    fun `a cancelled call that had not started does nothing`() = runTest {
        val (alice, bob) = establishedPair()
        val busy = CountDownLatch(1)
        val entered = CompletableDeferred<Unit>()
        // Hold the client in a batch so that the next call waits for it.
        val holder = launch(Dispatchers.Default) {
            bob.decryptBatch(queueFrom(alice, 1)) { _, _ -> entered.complete(Unit); busy.await(30, TimeUnit.SECONDS); true }
        }
        entered.await()
        val waiting = launch(Dispatchers.Default) { bob.deleteSession("alice") }
        // Long enough for the call to reach the worker and wait for the batch.
        Thread.sleep(200)
        waiting.cancelAndJoin()
        busy.countDown()
        holder.join()
        // The delete never ran.
        assertTrue(bob.hasSession("alice"))
        assertEquals("still", text(bob.decrypt("alice", alice.encrypt("bob", bytes("still")))))
    }
}
