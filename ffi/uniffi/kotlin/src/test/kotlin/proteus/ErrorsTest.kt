package proteus

import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.test.runTest
import java.io.RandomAccessFile
import java.nio.file.Files
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertTrue

/**
 * Every error kind an application can meet through this API, each with its stable code (the
 * same as in Rust and JavaScript). Codes that need a corrupted session or a broken disk to
 * appear are covered by the Rust tests of proteus-core and proteus-client.
 */
class ErrorsTest {
    private fun decodeKinds() = setOf(
        ErrorKind.TRUNCATED, ErrorKind.TRAILING_BYTES, ErrorKind.UNEXPECTED_TYPE, ErrorKind.UNSUPPORTED_CBOR,
        ErrorKind.INTEGER_OUT_OF_RANGE, ErrorKind.MISSING_FIELD, ErrorKind.DUPLICATE_FIELD, ErrorKind.INVALID_LENGTH,
        ErrorKind.LIMIT_EXCEEDED, ErrorKind.TOO_DEEP, ErrorKind.UNKNOWN_MESSAGE_TYPE,
    )

    @Test
    fun `exceptions carry code, kind and a message`() = runTest {
        val e = expectError(104, ErrorKind.SESSION_NOT_FOUND) { Client.inMemory().encrypt("nobody", bytes("x")) }
        assertTrue(e.message!!.contains("SESSION_NOT_FOUND") || e.message!!.contains("SessionNotFound"), e.message)
        // Session ids are user data: kept out of the message.
        kotlin.test.assertFalse(e.message!!.contains("nobody"), e.message)
        assertTrue(e is ProteusException.Engine)
    }

    @Test
    fun `client misuse - 104 to 110, and 101`() = runTest {
        val (alice, bob) = establishedPair()
        expectError(104, ErrorKind.SESSION_NOT_FOUND) { alice.encrypt("carol", bytes("x")) }
        expectError(104, ErrorKind.SESSION_NOT_FOUND) { alice.remoteFingerprint("carol") }
        expectError(104, ErrorKind.SESSION_NOT_FOUND) { alice.exportSession("carol") }
        expectError(105, ErrorKind.SESSION_EXISTS) { alice.createSession("bob", bob.lastResortBundle().bytes) }
        expectError(106, ErrorKind.INVALID_SESSION_ID) { alice.encrypt("", bytes("x")) }
        expectError(106, ErrorKind.INVALID_SESSION_ID) { alice.createSession("x".repeat(1025), bob.lastResortBundle().bytes) }
        expectError(107, ErrorKind.IDENTITY_IN_USE) { alice.importIdentity(Client.inMemory().exportIdentity()) }
        expectError(108, ErrorKind.BATCH_ABORTED) {
            bob.decryptBatch(queueFrom(alice, 1), Collector { _, _ -> false })
        }
        expectError(101, ErrorKind.PRE_KEY_NOT_FOUND) { bob.prekeyBundle(4242) }
        expectError(110, ErrorKind.PRE_KEY_IDS_EXHAUSTED) { bob.generatePrekeys(70_000) }
    }

    @Test
    fun `binding errors - 120 and 121`() = runTest {
        val (alice, bob) = pair()
        expectError(120, ErrorKind.CLIENT_BUSY) {
            bob.decryptBatch(queueFrom(alice, 1), Collector { _, _ -> runBlocking { bob.prekeysRemaining() }; true })
        }
        expectError(121, ErrorKind.CALLBACK_FAILED) {
            bob.decryptBatch(queueFrom(alice, 1), Collector { _, _ -> error("boom") })
        }
    }

    @Test
    fun `handshake errors - 101 prekey used up, 204 remote identity changed`() = runTest {
        val bob = Client.inMemory()
        val bundle = bob.generatePrekeys(1).single()
        val alice = Client.inMemory().apply { createSession("bob", bundle.bytes) }
        val mallory = Client.inMemory().apply { createSession("bob", bundle.bytes) }
        bob.decrypt("alice", alice.encrypt("bob", bytes("first")))
        // The one-time prekey was used up by Alice's handshake.
        expectError(101, ErrorKind.PRE_KEY_NOT_FOUND) { bob.decrypt("mallory", mallory.encrypt("bob", bytes("late"))) }
        // A handshake from another identity under Alice's session id.
        val carol = Client.inMemory().apply { createSession("bob", bob.lastResortBundle().bytes) }
        expectError(204, ErrorKind.REMOTE_IDENTITY_CHANGED) { bob.decrypt("alice", carol.encrypt("bob", bytes("me?"))) }
    }

    @Test
    fun `message errors - 206 bad MAC, 209 duplicate, 212 too far ahead`() = runTest {
        val (alice, bob) = establishedPair()
        val envelope = alice.encrypt("bob", bytes("once"))
        val tampered = envelope.copyOf().also { it[it.size - 1] = (it[it.size - 1] + 1).toByte() }
        expectError(206, ErrorKind.INVALID_SIGNATURE) { bob.decrypt("alice", tampered) }
        assertEquals("once", text(bob.decrypt("alice", envelope)))
        expectError(209, ErrorKind.DUPLICATE_MESSAGE) { bob.decrypt("alice", envelope) }
        // A gap over 1000 is fast-forwarded (up to 100,000 skipped messages); more is refused.
        val skipped = (0 until 1002).map { alice.encrypt("bob", bytes("m$it")) }
        assertEquals("m1001", text(bob.decrypt("alice", skipped.last())))
        repeat(100_001) { alice.encrypt("bob", bytes("x")) }
        expectError(212, ErrorKind.TOO_DISTANT_FUTURE) { bob.decrypt("alice", alice.encrypt("bob", bytes("far"))) }
    }

    @Test
    fun `214 - a skipped message whose key was evicted is not already seen`() = runTest {
        val (alice, bob) = establishedPair()
        val sent = (0 until 1500).map { alice.encrypt("bob", bytes("m$it")) }
        assertEquals("m900", text(bob.decrypt("alice", sent[900])))
        // 1498 keys skipped in all; only the newest 1000 are kept, so message 0's is gone.
        assertEquals("m1499", text(bob.decrypt("alice", sent[1499])))
        expectError(214, ErrorKind.MESSAGE_KEY_EVICTED) { bob.decrypt("alice", sent[0]) }
        val collector = Collector()
        val summary = bob.decryptBatch(listOf(QueuedMessage("alice", sent[1])), collector)
        assertEquals(listOf(1, 0, 0, 1, 0), summary.counts())
        assertTrue(summary.failedByCode.isEmpty())
        val r = collector.results.single()
        assertEquals(214 to false, r.errorCode to r.alreadySeen)
        assertEquals("m1400", text(bob.decrypt("alice", sent[1400])))
    }

    @Test
    fun `decoding errors - 3xx for bytes that are not what they claim`() = runTest {
        val client = Client.inMemory()
        for (garbage in listOf(byteArrayOf(), byteArrayOf(0x01), byteArrayOf(0xa1.toByte(), 0x00), ByteArray(64) { 0x5a })) {
            val e = kotlin.test.assertFailsWith<ProteusException> { client.decrypt("peer", garbage) }
            assertEquals(3, e.code / 100, "${e.kind} ${e.code}")
            assertTrue(e.kind in decodeKinds(), e.kind.toString())
            val b = kotlin.test.assertFailsWith<ProteusException> { client.createSession("peer", garbage) }
            assertEquals(3, b.code / 100, "${b.kind} ${b.code}")
            kotlin.test.assertFailsWith<ProteusException> { bundleFingerprint(garbage) }
            kotlin.test.assertFailsWith<ProteusException> { client.importPrekey(garbage) }
            kotlin.test.assertFailsWith<ProteusException> { client.importSession("peer", garbage) }
        }
        expectError(300, ErrorKind.LOCAL_IDENTITY_CHANGED) {
            // A session made by another identity does not belong to this client.
            val (alice, _) = establishedPair()
            client.importSession("bob", alice.exportSession("bob"))
        }
    }

    @Test
    fun `input errors - 409 invalid key, 410 plaintext too long`() = runTest {
        val bob = Client.inMemory()
        val bundle = bob.generatePrekeys(1).single().bytes
        // Replace the identity key inside the bundle with an invalid point (all zeros).
        val identity = bob.fingerprint().chunked(2).map { it.toInt(16).toByte() }.toByteArray()
        val at = (0..bundle.size - 32).first { i -> (0 until 32).all { bundle[i + it] == identity[it] } }
        val broken = bundle.copyOf().also { for (i in 0 until 32) it[at + i] = 0 }
        expectError(409, ErrorKind.INVALID_KEY) { Client.inMemory().createSession("bob", broken) }
        val (alice, _) = pair()
        expectError(410, ErrorKind.PLAINTEXT_TOO_LONG) { alice.encrypt("bob", ByteArray(5 * 1024 * 1024)) }
    }

    @Test
    fun `store errors - 502 to 506`() = runTest {
        val path = tempStore()
        expectError(504, ErrorKind.STORE_NOT_FOUND) { Client.open(path.toString(), mode = OpenMode.EXISTING, options = ClientOptions()) }
        Client.open(path.toString(), mode = OpenMode.NEW, options = ClientOptions()).use { bob ->
            // A second opener shares the store (an app and its extension)...
            Client.open(path.toString(), mode = OpenMode.EXISTING_OR_NEW, options = ClientOptions()).use {
                assertEquals(bob.fingerprint(), it.fingerprint())
            }
            // ...but waits for a call of the other to end: from inside a batch's delivery, an
            // opener with a 50 ms busy timeout gets StoreBusy.
            val alice = Client.inMemory()
            alice.createSession("bob", bob.generatePrekeys(1).single().bytes)
            var busy: ProteusException? = null
            bob.decryptBatch(queueFrom(alice, 1), Collector { _, _ ->
                busy = expectError(502, ErrorKind.STORE_BUSY) {
                    runBlocking { Client.open(path.toString(), mode = OpenMode.EXISTING_OR_NEW, options = ClientOptions(busyTimeoutMs = 50)) }
                }
                true
            }, maxChunk = 1, progressIntervalMs = 0)
            assertEquals(502, busy?.code)
        }
        expectError(505, ErrorKind.STORE_ALREADY_EXISTS) { Client.open(path.toString(), mode = OpenMode.NEW, options = ClientOptions()) }
        // A newer schema version (SQLite's user_version, at offset 60 of the header).
        val newer = tempStore()
        Client.open(newer.toString()).close()
        RandomAccessFile(newer.toFile(), "rw").use { it.seek(60); it.writeInt(99) }
        expectError(506, ErrorKind.UNSUPPORTED_SCHEMA) { Client.open(newer.toString()) }
        // Not a store at all: reported, and left as it was.
        val corrupt = tempStore()
        val junk = ByteArray(8192) { (it * 7).toByte() }
        Files.write(corrupt, junk)
        val e = kotlin.test.assertFailsWith<ProteusException> { Client.open(corrupt.toString()) }
        assertTrue(e.code == 503 || e.code == 507, "${e.kind} ${e.code}")
        kotlin.test.assertContentEquals(junk, Files.readAllBytes(corrupt))
    }

    @Test
    fun `store errors - 507 storage failure`() = runTest {
        val dir = Files.createTempDirectory("proteus-kotlin-dir-")
        expectError(507, ErrorKind.STORAGE_FAILURE) { Client.open(dir.toString()) }
    }
}
