package proteus

import kotlinx.coroutines.test.runTest
import kotlin.test.Test
import kotlin.test.assertContentEquals
import kotlin.test.assertEquals
import kotlin.test.assertNotEquals
import kotlin.test.assertNotSame

/** Int/Long arguments checked in range, records with ByteArray fields compared by content, defaults. */
class IdiomsTest {
    @Test
    fun `integers out of range are IntegerOutOfRange 309 and change nothing`() = runTest {
        val bob = Client.inMemory()
        expectError(309, ErrorKind.INTEGER_OUT_OF_RANGE) { bob.generatePrekeys(-1) }
        expectError(309, ErrorKind.INTEGER_OUT_OF_RANGE) { bob.prekeyBundle(-1) }
        expectError(309, ErrorKind.INTEGER_OUT_OF_RANGE) { bob.prekeyBundle(65_536) }
        expectError(309, ErrorKind.INTEGER_OUT_OF_RANGE) { bob.setMaxCounterGap(-5) }
        expectError(309, ErrorKind.INTEGER_OUT_OF_RANGE) { bob.decryptBatch(emptyList(), maxChunk = 0) { _, _ -> true } }
        expectError(309, ErrorKind.INTEGER_OUT_OF_RANGE) { bob.decryptBatch(emptyList(), progressIntervalMs = -1) { _, _ -> true } }
        expectError(309, ErrorKind.INTEGER_OUT_OF_RANGE) { Client.inMemory(ClientOptions(waitTimeoutMs = -1)) }
        expectError(309, ErrorKind.INTEGER_OUT_OF_RANGE) { Client.inMemory(ClientOptions(batchThreads = 0)) }
        expectError(309, ErrorKind.INTEGER_OUT_OF_RANGE) {
            Client.open(tempStore().toString(), options = ClientOptions(busyTimeoutMs = Long.MAX_VALUE))
        }
        assertEquals(0, bob.prekeysRemaining())
        assertEquals(65_535, bob.prekeyBundle(65_535).id)
    }

    @Test
    fun `batchThreads gives the same results with one thread or several`() = runTest {
        for (threads in listOf(1, 3)) {
            Client.inMemory(ClientOptions(batchThreads = threads)).use { receiver ->
                Client.inMemory().use { sender ->
                    sender.createSession("r", receiver.generatePrekeys(1).first().bytes)
                    val queue = (0 until 50).map { QueuedMessage("s", sender.encrypt("r", "m$it".toByteArray())) }
                    val texts = mutableListOf<String>()
                    receiver.decryptBatch(queue) { chunk, _ -> chunk.forEach { texts += String(it.plaintext!!) }; true }
                    assertEquals((0 until 50).map { "m$it" }, texts)
                }
            }
        }
    }

    @Test
    fun `records with byte arrays are equal by content`() = runTest {
        val bob = Client.inMemory()
        val a = bob.lastResortBundle()
        val b = bob.lastResortBundle()
        assertNotSame(a.bytes, b.bytes)
        assertEquals(a, b)
        assertEquals(a.hashCode(), b.hashCode())
        assertEquals(a, bob.prekeyBundle(65_535))
        assertEquals(setOf(a), setOf(b))
        assertNotEquals(a, a.copy(bytes = a.bytes.copyOf().also { it[0] = (it[0] + 1).toByte() }))
        assertEquals(QueuedMessage("x", byteArrayOf(1, 2)), QueuedMessage("x", byteArrayOf(1, 2)))
        assertEquals(OutgoingMessage("x", bytes("p")), OutgoingMessage("x", bytes("p")))
        val (alice, carol) = pair()
        val envelope = alice.encrypt("bob", bytes("same"))
        val first = mutableListOf<BatchResult>()
        carol.decryptBatch(listOf(QueuedMessage("alice", envelope))) { r, _ -> first += r; true }
        val again = first.single().copy(plaintext = bytes("same"))
        assertEquals(first.single(), again)
    }

    @Test
    fun `lastResortBundle has the shape of every other bundle`() = runTest {
        val bob = Client.inMemory()
        val one: PreKeyBundle = bob.generatePrekeys(1).single()
        val last: PreKeyBundle = bob.lastResortBundle()
        assertEquals(65_535, last.id)
        // Both are what createSession takes.
        Client.inMemory().createSession("bob", last.bytes)
        Client.inMemory().createSession("bob", one.bytes)
        assertEquals(bundleFingerprint(one.bytes), bundleFingerprint(last.bytes))
        assertContentEquals(bob.prekeyBundle(one.id).bytes, one.bytes)
    }

    @Test
    fun `open and inMemory take defaults`() = runTest {
        val path = tempStore().toString()
        val fingerprint = Client.open(path).use { it.fingerprint() }
        Client.open(path, mode = OpenMode.EXISTING).use { assertEquals(fingerprint, it.fingerprint()) }
        Client.open(path, null, OpenMode.EXISTING, ClientOptions(busyTimeoutMs = 100)).use {
            assertEquals(fingerprint, it.fingerprint())
        }
        expectError(505, ErrorKind.STORE_ALREADY_EXISTS) { Client.open(path, mode = OpenMode.NEW) }
        Client.inMemory().close()
        Client.inMemory(ClientOptions(waitTimeoutMs = 10)).close()
        assertEquals(ClientOptions(5000, 30_000), ClientOptions())
    }
}
